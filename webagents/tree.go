package webagents

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/jsonstr"
)

// maxFastTreeDepth is the nesting up to which fastTree decodes; deeper
// documents take encoding/json's path.
const maxFastTreeDepth = 200

// fastTree decodes data as encoding/json decodes one complete JSON
// document into an any with UseNumber (map[string]any, []any, string,
// json.Number, bool, nil), without reflection. It returns ok false, and
// the caller decodes with encoding/json, for anything it is not sure of:
// malformed or trailing text, or nesting deeper than maxFastTreeDepth.
// When ok is true the value is what encoding/json would produce.
func fastTree(data []byte) (v any, ok bool) {
	p := treeParser{data: data}
	p.space()
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.pos == len(p.data)
}

type treeParser struct {
	data []byte
	pos  int
}

func (p *treeParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *treeParser) value(depth int) (any, bool) {
	if p.pos >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *treeParser) literal(lit string) bool {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return false
	}
	p.pos += len(lit)
	return true
}

func (p *treeParser) object(depth int) (any, bool) {
	if depth > maxFastTreeDepth {
		return nil, false
	}
	p.pos++ // '{'
	m := make(map[string]any)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, true
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, false
		}
		p.pos++
		p.space()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // the last of duplicate keys wins, as in encoding/json
		p.space()
		if p.pos >= len(p.data) {
			return nil, false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.space()
		case '}':
			p.pos++
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *treeParser) array(depth int) (any, bool) {
	if depth > maxFastTreeDepth {
		return nil, false
	}
	p.pos++ // '['
	a := make([]any, 0)
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.space()
		case ']':
			p.pos++
			return a, true
		default:
			return nil, false
		}
	}
}

// str decodes the string at p.pos. Strings with escapes or bytes outside
// ASCII that are not plain valid UTF-8 are decoded by encoding/json, so
// that escapes, surrogates and invalid bytes come out as it makes them.
func (p *treeParser) str() (string, bool) {
	start := p.pos
	p.pos++ // '"'
	plain := true
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			raw := p.data[start+1 : p.pos-1]
			if plain || utf8.Valid(raw) {
				return string(raw), true
			}
			return p.slowString(start)
		case c == '\\':
			// Find the end; encoding/json decodes the escapes.
			p.pos++
			for p.pos < len(p.data) {
				switch p.data[p.pos] {
				case '\\':
					p.pos += 2
					continue
				case '"':
					p.pos++
					return p.slowString(start)
				}
				p.pos++
			}
			return "", false
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			plain = false
		}
		p.pos++
	}
	return "", false
}

func (p *treeParser) slowString(start int) (string, bool) {
	if p.pos > len(p.data) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
		return "", false
	}
	return s, true
}

// number scans a number with JSON's grammar.
func (p *treeParser) number() (any, bool) {
	end := scanNumber(p.data, p.pos)
	if end < 0 {
		return nil, false
	}
	n := json.Number(p.data[p.pos:end])
	p.pos = end
	return n, true
}

// scanNumber returns the end of the JSON number that starts at s[i], or -1
// when none does.
func scanNumber[T string | []byte](s T, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return -1
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		i = scanDigits(s, i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := scanDigits(s, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := scanDigits(s, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func scanDigits[T string | []byte](s T, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// appendTree appends v encoded as marshalCompact encodes it (keys sorted,
// no HTML escaping) for the values decodeTree makes, and reports false
// for anything else (another type, a json.Number encoding/json would
// refuse), which the caller then encodes with marshalCompact.
func appendTree(dst []byte, v any) ([]byte, bool) {
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if t {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case json.Number:
		if t == "" {
			return append(dst, '0'), true // as encoding/json writes it
		}
		if scanNumber(string(t), 0) != len(t) {
			return dst, false
		}
		return append(dst, t...), true
	case string:
		return appendTreeString(dst, t), true
	case []any:
		if t == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendTree(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), true
		}
		var small [8]string
		dst = append(dst, '{')
		for i, k := range sortedKeys(t, small[:0]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTreeString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendTree(dst, t[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// sortedKeys appends the keys of m to keys, sorted.
func sortedKeys(m map[string]any, keys []string) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendTreeString appends s as a JSON string as marshalCompact writes
// it: encoding/json's escaping without HTML escaping.
func appendTreeString(dst []byte, s string) []byte { return jsonstr.Append(dst, s, true) }

// encodeTree is marshalCompact for the values decodeTree makes, without
// reflection for the common ones.
func encodeTree(v any) ([]byte, error) {
	if out, ok := appendTree(nil, v); ok {
		return out, nil
	}
	return marshalCompact(v)
}

// maxRawPathBytes is the longest result rawPath reads a path from. Within
// it no document nests as deep as encoding/json refuses (10,000 levels), so
// a value decoded alone is the value decoded as part of the whole.
const maxRawPathBytes = 16 << 10

// rawPath returns the value at a dotted path in the JSON document data,
// decoded as decodeTree decodes it: what walkPath finds in decodeTree(data),
// where the last of duplicate keys is the one seen, without decoding the
// rest. ok is false, and the caller decodes the whole, for a document it is
// not sure of.
func rawPath(data []byte, rest string) (v any, found, ok bool) {
	if strings.Count(rest, ".") >= maxRawDepth {
		return nil, false, false // each step scans the rest of the value again
	}
	p := treeParser{data: data}
	p.space()
	depth := 0 // of the container the value at p.pos is in
	for dotted := true; dotted; {
		depth++
		var seg string
		seg, rest, dotted = strings.Cut(rest, ".")
		if p.pos >= len(p.data) {
			return nil, false, false
		}
		switch p.data[p.pos] {
		case '{':
			at, ok := p.member(seg, depth)
			if !ok {
				return nil, false, false
			}
			if at < 0 {
				return nil, false, true
			}
			p.pos = at
		case '[':
			i, isIndex := arrayIndex(seg)
			if !isIndex {
				return nil, false, true
			}
			at, ok := p.element(i, depth)
			if !ok {
				return nil, false, false
			}
			if at < 0 {
				return nil, false, true
			}
			p.pos = at
		default:
			return nil, false, true
		}
	}
	start := p.pos
	if !p.skipStrict(depth) {
		return nil, false, false
	}
	v, err := decodeTree(p.data[start:p.pos])
	return v, err == nil, err == nil
}

// member returns where the value of the object at p.pos's last member
// named key starts, or -1 when it has none.
func (p *treeParser) member(key string, depth int) (at int, ok bool) {
	at = -1
	empty, ok := p.openObject(depth)
	if !ok || empty {
		return at, ok
	}
	for more := true; more; {
		var m rawMember
		if m, more, ok = p.nextMember(depth); !ok {
			return 0, false
		}
		if string(m.key) == key {
			at = m.start
		}
	}
	return at, true
}

// element returns where the i-th element of the array at p.pos starts, or
// -1 when it is shorter.
func (p *treeParser) element(i, depth int) (at int, ok bool) {
	more, ok := p.openArray(depth)
	for n := 0; ok && more; n++ {
		if n == i {
			return p.pos, true
		}
		if !p.skipStrict(depth) {
			return 0, false
		}
		more, ok = p.nextElement()
	}
	return -1, ok
}
