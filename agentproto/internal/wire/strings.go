package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentbridge/agentbridge/internal/jsonstr"
	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Unquote decodes a JSON string literal (with its quotes) that the scanner
// accepted. Literals without escapes are returned as a sub-slice without
// allocating.
func Unquote(lit []byte) ([]byte, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, false
	}
	inner := lit[1 : len(lit)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return nil, false
			}
			return []byte(s), true
		}
	}
	return inner, true
}

// UnquoteExact is Unquote for a string compared exactly with one of the
// program's own, such as a token: it refuses a literal that escapes a lone
// UTF-16 surrogate ("\ud800"). Unquote decodes one as U+FFFD, as
// encoding/json does, so "\ud800", "\udfff" and "\ufffd" would all match a
// token holding U+FFFD, where JavaScript (the reference bridge's ===) keeps
// the surrogate and matches none of them but the last.
func UnquoteExact(lit []byte) ([]byte, bool) {
	if bytes.IndexByte(lit, '\\') >= 0 && strictjson.Check(lit) != nil {
		return nil, false
	}
	return Unquote(lit)
}

// UnescapeKey decodes a member key as Members returns it.
func UnescapeKey(m Member) []byte {
	if !m.KeyEscaped {
		return m.Key
	}
	quoted := make([]byte, 0, len(m.Key)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, m.Key...)
	quoted = append(quoted, '"')
	k, _ := Unquote(quoted)
	return k
}

// AppendString appends s as a JSON string literal, escaping as
// JSON.stringify does (HTML characters and U+2028/2029 are left alone).
func AppendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s, false) }

// AppendUint appends n in decimal.
func AppendUint(dst []byte, n uint64) []byte { return strconv.AppendUint(dst, n, 10) }

// ParseUint parses a decimal unsigned integer of at most 19 digits with no
// sign or leading zeros (other than "0" itself).
func ParseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
