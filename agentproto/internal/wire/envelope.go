package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// maxTimeout bounds timeoutMs so that absurd values cannot overflow a
// time.Duration: a day is longer than any browser task.
const maxTimeout = 24 * time.Hour

// Request is a decoded agent request, its fields sub-slices of the frame.
type Request struct {
	ID       []byte // raw JSON value, nil when missing, null or ""
	Type     []byte // the type's raw string literal, quotes included
	TypeStr  string
	Payload  []byte // raw object; nil when missing or not an object
	Timeout  time.Duration
	Token    []byte // decoded; valid when hasToken
	HasToken bool
}

// EmptyObject is the payload of a request that has none.
var EmptyObject = []byte("{}")

// errDuplicateMember refuses an envelope naming one of its members twice:
// JavaScript would take the last, encoding/json too, and an auth check
// reading the first would be fooled.
type duplicateMemberError struct{ name string }

func (e *duplicateMemberError) Error() string {
	return fmt.Sprintf("duplicate %q member in request", e.name)
}

// DecodeRequest decodes an agent request envelope strictly: keys match
// exactly (as in JavaScript), a member named twice is refused, a token
// that is not a string is no token. Everything else follows the notes:
// payload that is not an object becomes {}, timeoutMs that is not a
// positive number becomes the default.
func DecodeRequest(data []byte, r *Request) error {
	*r = Request{}
	var it Members
	it.Reset(data)
	var seen uint8
	var dup *duplicateMemberError
	idTwice := false
	for it.Next() {
		m := it.Member()
		key := UnescapeKey(m)
		var bit uint8
		switch string(key) {
		case "id":
			bit = 1
			if seen&bit == 0 && !isEmptyID(m.Value) {
				r.ID = m.Value
			}
		case "type":
			bit = 2
			if m.Value[0] == '"' {
				r.Type = m.Value
			}
		case "payload":
			bit = 4
			if m.Value[0] == '{' {
				r.Payload = m.Value
			}
		case "timeoutMs":
			bit = 8
			r.Timeout = ParseTimeout(m.Value)
		case "token":
			bit = 16
			if m.Value[0] == '"' {
				r.Token, r.HasToken = UnquoteExact(m.Value) // "\ud800" is not U+FFFD
			}
		default:
			continue
		}
		if seen&bit != 0 {
			// Refused, but the scan goes on: a syntax error later in the
			// frame is reported first, as a parser would, and the
			// refusal carries the request's id when it has one (a
			// client waits for it by id).
			if dup == nil {
				dup = &duplicateMemberError{name: string(key)}
			}
			if bit == 1 {
				idTwice = true
			}
			continue
		}
		seen |= bit
	}
	if err := it.Err(); err != nil {
		r.ID = nil
		return err
	}
	if dup != nil {
		if idTwice {
			r.ID = nil // which one?
		}
		return dup
	}
	if r.Type != nil {
		t, _ := Unquote(r.Type)
		r.TypeStr = string(t)
		if r.TypeStr == "" {
			r.Type = nil
		}
	}
	return nil
}

func isEmptyID(v []byte) bool {
	return string(v) == "null" || string(v) == `""`
}

// ParseTimeout reads timeoutMs: a positive number of milliseconds, else 0
// (the default applies).
func ParseTimeout(v []byte) time.Duration {
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0
	}
	if n, ok := ParseUint(v); ok {
		if n > uint64(maxTimeout/time.Millisecond) {
			return maxTimeout
		}
		return time.Duration(n) * time.Millisecond
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || !(f > 0) {
		return 0
	}
	ms := math.Ceil(f * float64(time.Millisecond))
	if ms >= float64(maxTimeout) {
		return maxTimeout
	}
	return time.Duration(ms)
}

// ExtensionFrame is a decoded frame from the extension.
type ExtensionFrame struct {
	Kind     []byte // decoded
	ID       []byte // decoded string id; nil when absent or not a string
	Result   []byte // raw; nil when absent
	ErrorMsg []byte // raw value of "error"; nil when absent
	Event    []byte // raw
}

var errNotStringKind = errors.New("frame kind is not a string")

func DecodeExtensionFrame(data []byte, f *ExtensionFrame) error {
	*f = ExtensionFrame{}
	var it Members
	it.Reset(data)
	for it.Next() {
		m := it.Member()
		switch string(UnescapeKey(m)) {
		case "kind":
			if m.Value[0] == '"' {
				f.Kind, _ = Unquote(m.Value)
			}
		case "id":
			if m.Value[0] == '"' {
				f.ID, _ = Unquote(m.Value)
			}
		case "result":
			f.Result = m.Value
		case "error":
			f.ErrorMsg = m.Value
		case "event":
			f.Event = m.Value
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if f.Kind == nil {
		return errNotStringKind
	}
	return nil
}

// ErrorText is the message of an "error" member: the string itself, or
// the raw JSON of any other value (the reference stringifies what it is
// given; a null error is no error).
func ErrorText(raw []byte) (string, bool) {
	if raw == nil || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		s, _ := Unquote(raw)
		return string(s), true
	}
	return string(raw), true
}
