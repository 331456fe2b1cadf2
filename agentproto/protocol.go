package agentproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// DefaultSocketPath is the agent socket's path when WEBOPERATOR_AGENT_SOCKET
// is not set, on Unix systems. Windows uses a per-user path instead (see
// [PlatformSocketPath]).
const DefaultSocketPath = "/tmp/weboperator-bridge.sock"

// HostName is the native messaging host's name, as the extension passes it
// to chrome.runtime.connectNative.
const HostName = "com.weboperator.bridge"

// DefaultTimeout is how long a request waits for the extension when its
// timeoutMs is missing or 0.
const DefaultTimeout = 60 * time.Second

// DefaultWaitTimeout is how long tasks.wait waits when its payload has no
// timeoutMs (the extension's default).
const DefaultWaitTimeout = 120 * time.Second

// maxTimeout bounds timeoutMs so that absurd values cannot overflow a
// time.Duration: a day is longer than any browser task.
const maxTimeout = 24 * time.Hour

// Command types: a request's "type". They are untyped strings, as
// net/http's Method constants are, because the set is open: a [Server]
// relays any type to the extension (which answers an unknown one with
// [ErrUnknownRequest]), and [Client.Call] sends any. browser.type is
// TypeText, not the stutter TypeType.
const (
	TypeHealth       = "bridge.health"
	TypeSnapshot     = "browser.snapshot"
	TypeScreenshot   = "browser.screenshot"
	TypeNavigate     = "browser.navigate"
	TypeClick        = "browser.click"
	TypeText         = "browser.type"
	TypePress        = "browser.press"
	TypeScroll       = "browser.scroll"
	TypeExtract      = "browser.extract"
	TypeTasksList    = "tasks.list"
	TypeTasksGet     = "tasks.get"
	TypeTasksStart   = "tasks.start"
	TypeTasksStop    = "tasks.stop"
	TypeTasksPause   = "tasks.pause"
	TypeTasksResume  = "tasks.resume"
	TypeTasksConfirm = "tasks.confirm"
	TypeTasksWait    = "tasks.wait"
)

// FrameKind is a frame's "kind" member. The zero value is none: a frame
// without one, which the host ignores.
type FrameKind string

// Frame kinds. The extension and the host exchange only the four
// "bridge:" kinds; agents receive events as [KindAgentEvent] frames.
const (
	KindHello    FrameKind = "bridge:hello"
	KindRequest  FrameKind = "bridge:request"
	KindResponse FrameKind = "bridge:response"
	KindEvent    FrameKind = "bridge:event"
	// KindAgentEvent is the kind of the frame carrying an event to agents.
	KindAgentEvent FrameKind = "event"
)

// Request is an agent's request as it travels on the socket.
//
// ID is echoed in the reply exactly as sent (a string, a number, any JSON
// value); a request without one (or with null or "") is answered with a
// generated id. Payload is relayed to the extension byte for byte; when it
// is missing or not an object the extension receives {}.
type Request struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Token     string          `json:"token,omitempty"`
}

// Response is the reply to a [Request]. Exactly one of Result and Error is
// meaningful: a reply with neither is a null result.
type Response struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// EventFrame is how an event reaches agents: {"kind":"event","event":E}.
type EventFrame struct {
	Kind  FrameKind       `json:"kind"`
	Event json.RawMessage `json:"event"`
}

// ExtensionRequest is the frame the host sends the extension for each
// forwarded request. ID is the host's own id, never the agent's.
type ExtensionRequest struct {
	Kind    FrameKind       `json:"kind"` // KindRequest
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// ExtensionResponse is the extension's answer to an [ExtensionRequest].
// When HasError is false and Result is empty the result is null.
type ExtensionResponse struct {
	Kind   FrameKind       `json:"kind"` // KindResponse
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// request is a decoded agent request, its fields sub-slices of the frame.
type request struct {
	id       []byte // raw JSON value, nil when missing, null or ""
	typ      []byte // the type's raw string literal, quotes included
	typeStr  string
	payload  []byte // raw object; nil when missing or not an object
	timeout  time.Duration
	token    []byte // decoded; valid when hasToken
	hasToken bool
}

var emptyObject = []byte("{}")

// errDuplicateMember refuses an envelope naming one of its members twice:
// JavaScript would take the last, encoding/json too, and an auth check
// reading the first would be fooled.
type duplicateMemberError struct{ name string }

func (e *duplicateMemberError) Error() string {
	return fmt.Sprintf("duplicate %q member in request", e.name)
}

// decodeRequest decodes an agent request envelope strictly: keys match
// exactly (as in JavaScript), a member named twice is refused, a token
// that is not a string is no token. Everything else follows the notes:
// payload that is not an object becomes {}, timeoutMs that is not a
// positive number becomes the default.
func decodeRequest(data []byte, r *request) error {
	*r = request{}
	var it wire.Members
	it.Reset(data)
	var seen uint8
	var dup *duplicateMemberError
	idTwice := false
	for it.Next() {
		m := it.Member()
		key := wire.UnescapeKey(m)
		var bit uint8
		switch string(key) {
		case "id":
			bit = 1
			if seen&bit == 0 && !isEmptyID(m.Value) {
				r.id = m.Value
			}
		case "type":
			bit = 2
			if m.Value[0] == '"' {
				r.typ = m.Value
			}
		case "payload":
			bit = 4
			if m.Value[0] == '{' {
				r.payload = m.Value
			}
		case "timeoutMs":
			bit = 8
			r.timeout = parseTimeout(m.Value)
		case "token":
			bit = 16
			if m.Value[0] == '"' {
				r.token, r.hasToken = wire.UnquoteExact(m.Value) // "\ud800" is not U+FFFD
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
		r.id = nil
		return err
	}
	if dup != nil {
		if idTwice {
			r.id = nil // which one?
		}
		return dup
	}
	if r.typ != nil {
		t, _ := wire.Unquote(r.typ)
		r.typeStr = string(t)
		if r.typeStr == "" {
			r.typ = nil
		}
	}
	return nil
}

func isEmptyID(v []byte) bool {
	return string(v) == "null" || string(v) == `""`
}

// parseTimeout reads timeoutMs: a positive number of milliseconds, else 0
// (the default applies).
func parseTimeout(v []byte) time.Duration {
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0
	}
	if n, ok := wire.ParseUint(v); ok {
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

// ParseRequest decodes one agent request frame as a [Server] does: strictly
// (exact keys, a member named twice refused, a token that is not a string
// is no token) and with the defaults of the protocol applied: a missing or
// non-object payload becomes {}, and a missing, null or empty id stays
// empty (the server generates one). A timeoutMs that is not a positive
// number is 0.
func ParseRequest(data []byte) (*Request, error) {
	var r request
	if err := decodeRequest(data, &r); err != nil {
		return nil, err
	}
	req := &Request{
		Type:      r.typeStr,
		TimeoutMs: int64(r.timeout / time.Millisecond),
		Payload:   json.RawMessage(bytes.Clone(r.payload)),
	}
	if r.payload == nil {
		req.Payload = json.RawMessage(emptyObject)
	}
	if r.id != nil {
		req.ID = json.RawMessage(bytes.Clone(r.id))
	}
	if r.hasToken {
		req.Token = string(r.token)
	}
	return req, nil
}

// extensionFrame is a decoded frame from the extension.
type extensionFrame struct {
	kind     []byte // decoded
	id       []byte // decoded string id; nil when absent or not a string
	result   []byte // raw; nil when absent
	errorMsg []byte // raw value of "error"; nil when absent
	event    []byte // raw
}

var errNotStringKind = errors.New("frame kind is not a string")

func decodeExtensionFrame(data []byte, f *extensionFrame) error {
	*f = extensionFrame{}
	var it wire.Members
	it.Reset(data)
	for it.Next() {
		m := it.Member()
		switch string(wire.UnescapeKey(m)) {
		case "kind":
			if m.Value[0] == '"' {
				f.kind, _ = wire.Unquote(m.Value)
			}
		case "id":
			if m.Value[0] == '"' {
				f.id, _ = wire.Unquote(m.Value)
			}
		case "result":
			f.result = m.Value
		case "error":
			f.errorMsg = m.Value
		case "event":
			f.event = m.Value
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if f.kind == nil {
		return errNotStringKind
	}
	return nil
}

// errorText is the message of an "error" member: the string itself, or
// the raw JSON of any other value (the reference stringifies what it is
// given; a null error is no error).
func errorText(raw []byte) (string, bool) {
	if raw == nil || string(raw) == "null" {
		return "", false
	}
	if raw[0] == '"' {
		s, _ := wire.Unquote(raw)
		return string(s), true
	}
	return string(raw), true
}
