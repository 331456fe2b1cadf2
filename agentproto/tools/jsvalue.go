package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/safeprint"
)

// This file reproduces what the reference MCP server (JavaScript) does to
// a result before a model sees it: JSON.parse, then JSON.stringify or
// String(), so that a tool's text is byte for byte the reference's.

// jsCanonical returns the valid JSON text src as JavaScript writes
// JSON.stringify(JSON.parse(src)): compact; numbers as Number's toString
// (1.50 → 1.5, 1E3 → 1000, 1e21 → 1e+21, out of range → null); strings
// with only ", \, the C0 controls and lone surrogates escaped (\b \t \n \f
// \r, else \u00xx in lower case); an object's members with the array-index
// keys first in ascending order, then the others in the order of their
// first occurrence, a duplicate key's last value in its first place. A byte
// that is not UTF-8 becomes U+FFFD, as Node's decoder makes it.
//
// ok is false for text that is not valid JSON (json.Valid, which refuses
// more than 10,000 levels) or when reordering objects would copy more than
// four times src's size (objects nested deep that each need reordering):
// the caller prints src as it is.
func jsCanonical(src []byte) (out []byte, ok bool) {
	if !json.Valid(src) {
		return nil, false
	}
	c := &jsCanon{src: src, out: make([]byte, 0, len(src)), budget: 4*len(src) + 4096}
	c.value()
	if c.budget < 0 {
		return nil, false
	}
	return c.out, true
}

// jsCanon is the state of one jsCanonical: src is valid JSON, so the
// parser checks nothing.
type jsCanon struct {
	src     []byte
	pos     int
	out     []byte
	members []jsMember // a stack: each open object's members
	budget  int        // bytes reordering may still copy
}

// jsMember is one member of an object, as spans of out.
type jsMember struct {
	key, value [2]int
	index      int64 // the key as an array index, or -1
}

func (c *jsCanon) space() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *jsCanon) value() {
	c.space()
	switch b := c.src[c.pos]; {
	case b == '{':
		c.object()
	case b == '[':
		c.pos++
		c.out = append(c.out, '[')
		c.space()
		if c.src[c.pos] == ']' {
			c.pos++
			c.out = append(c.out, ']')
			return
		}
		for {
			c.value()
			c.space()
			b := c.src[c.pos]
			c.pos++
			c.out = append(c.out, b)
			if b == ']' {
				return
			}
		}
	case b == '"':
		c.str()
	case b == 't':
		c.pos += 4
		c.out = append(c.out, "true"...)
	case b == 'f':
		c.pos += 5
		c.out = append(c.out, "false"...)
	case b == 'n':
		c.pos += 4
		c.out = append(c.out, "null"...)
	default:
		start := c.pos
		for c.pos < len(c.src) && strings.IndexByte("+-0123456789.eE", c.src[c.pos]) >= 0 {
			c.pos++
		}
		f, _ := strconv.ParseFloat(string(c.src[start:c.pos]), 64) // ±Inf when out of range
		if math.IsInf(f, 0) {
			c.out = append(c.out, "null"...)
		} else {
			c.out = appendJSNumber(c.out, f)
		}
	}
}

func (c *jsCanon) object() {
	start, base := len(c.out), len(c.members)
	c.pos++
	c.out = append(c.out, '{')
	c.space()
	if c.src[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return
	}
	reorder, named, last := false, false, int64(-1)
	for {
		c.space()
		var m jsMember
		m.key[0] = len(c.out)
		c.str()
		m.key[1] = len(c.out)
		m.index = arrayIndex(c.out[m.key[0]+1 : m.key[1]-1])
		c.space()
		c.pos++ // ':'
		c.out = append(c.out, ':')
		m.value[0] = len(c.out)
		c.value()
		m.value[1] = len(c.out)
		if m.index < 0 {
			named = true
		} else if named || m.index <= last {
			reorder = true
		} else {
			last = m.index
		}
		if !reorder && c.duplicate(base, m) {
			reorder = true
		}
		c.members = append(c.members, m)
		c.space()
		b := c.src[c.pos]
		c.pos++
		if b == '}' {
			break
		}
		c.out = append(c.out, ',')
	}
	if reorder {
		c.reorder(start, c.members[base:])
	}
	c.out = append(c.out, '}')
	c.members = c.members[:base]
}

// duplicate reports whether m's key is one of the open object's earlier
// keys. The keys are canonical, so equal strings are equal bytes.
func (c *jsCanon) duplicate(base int, m jsMember) bool {
	key := c.out[m.key[0]:m.key[1]]
	for _, o := range c.members[base:] {
		if bytes.Equal(c.out[o.key[0]:o.key[1]], key) {
			return true
		}
	}
	return false
}

// reorder rewrites the object written at out[start:] (without its closing
// brace) in JavaScript's property order.
func (c *jsCanon) reorder(start int, members []jsMember) {
	type prop struct {
		first int // position of the key's first occurrence
		m     jsMember
	}
	var props []prop
	byKey := map[string]int{}
	for i, m := range members {
		key := string(c.out[m.key[0]:m.key[1]])
		if j, ok := byKey[key]; ok {
			props[j].m.value = m.value
			continue
		}
		byKey[key] = len(props)
		props = append(props, prop{first: i, m: m})
	}
	slices.SortStableFunc(props, func(a, b prop) int {
		switch {
		case a.m.index >= 0 && b.m.index >= 0:
			return int(a.m.index - b.m.index)
		case a.m.index >= 0:
			return -1
		case b.m.index >= 0:
			return 1
		}
		return a.first - b.first
	})
	buf := make([]byte, 0, len(c.out)-start)
	buf = append(buf, '{')
	for i, p := range props {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, c.out[p.m.key[0]:p.m.key[1]]...)
		buf = append(buf, ':')
		buf = append(buf, c.out[p.m.value[0]:p.m.value[1]]...)
	}
	c.budget -= len(buf)
	c.out = append(c.out[:start], buf...)
}

// arrayIndex returns key (canonical JSON string content) as an array
// index (0 to 2³²−2, no leading zero), or -1.
func arrayIndex(key []byte) int64 {
	if len(key) == 0 || len(key) > 10 || (key[0] == '0' && len(key) > 1) {
		return -1
	}
	var n int64
	for _, b := range key {
		if b < '0' || b > '9' {
			return -1
		}
		n = n*10 + int64(b-'0')
	}
	if n > math.MaxUint32-1 {
		return -1
	}
	return n
}

// str writes the string at pos as JSON.stringify does.
func (c *jsCanon) str() {
	c.pos++
	c.out = append(c.out, '"')
	for {
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			c.out = append(c.out, '"')
			return
		case b == '\\':
			c.escape()
		case b < utf8.RuneSelf:
			c.pos++
			c.out = appendJSRune(c.out, rune(b))
		default:
			r, n := utf8.DecodeRune(c.src[c.pos:])
			if r == utf8.RuneError && n == 1 {
				n = maximalSubpart(c.src[c.pos:])
			}
			c.pos += n
			c.out = appendJSRune(c.out, r)
		}
	}
}

// maximalSubpart is the length of the ill-formed sequence at the start of
// b that a WHATWG UTF-8 decoder (Node's) replaces with one U+FFFD: a lead
// byte and the continuation bytes that could still have completed it.
func maximalSubpart(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xbf), 0
	switch lead := b[0]; {
	case lead >= 0xc2 && lead <= 0xdf:
		need = 1
	case lead == 0xe0:
		lo, need = 0xa0, 2
	case lead == 0xed:
		hi, need = 0x9f, 2
	case lead >= 0xe1 && lead <= 0xef:
		need = 2
	case lead == 0xf0:
		lo, need = 0x90, 3
	case lead == 0xf4:
		hi, need = 0x8f, 3
	case lead >= 0xf1 && lead <= 0xf3:
		need = 3
	}
	n := 1
	for n <= need && n < len(b) && b[n] >= lo && b[n] <= hi {
		n++
		lo, hi = 0x80, 0xbf
	}
	return n
}

func (c *jsCanon) escape() {
	e := c.src[c.pos+1]
	c.pos += 2
	switch e {
	case 'b', 'f', 'n', 'r', 't':
		c.out = appendJSRune(c.out, rune("\b\f\n\r\t"[strings.IndexByte("bfnrt", e)]))
	case 'u':
		u := c.hex4()
		if u >= 0xd800 && u < 0xdc00 && c.pos+6 <= len(c.src) && c.src[c.pos] == '\\' && c.src[c.pos+1] == 'u' {
			if lo, err := strconv.ParseUint(string(c.src[c.pos+2:c.pos+6]), 16, 16); err == nil && lo >= 0xdc00 && lo < 0xe000 {
				c.pos += 6
				c.out = utf8.AppendRune(c.out, utf16.DecodeRune(rune(u), rune(lo)))
				return
			}
		}
		if utf16.IsSurrogate(rune(u)) {
			c.out = appendLoneSurrogate(c.out, u)
			return
		}
		c.out = appendJSRune(c.out, rune(u))
	default: // " \ /
		c.out = appendJSRune(c.out, rune(e))
	}
}

func (c *jsCanon) hex4() uint16 {
	n, _ := strconv.ParseUint(string(c.src[c.pos:c.pos+4]), 16, 16)
	c.pos += 4
	return uint16(n)
}

func appendLoneSurrogate(out []byte, u uint16) []byte {
	return append(out, `\u`+strconv.FormatUint(uint64(u), 16)...)
}

// appendJSRune appends r as JSON.stringify writes it in a string.
func appendJSRune(out []byte, r rune) []byte {
	switch r {
	case '"':
		return append(out, `\"`...)
	case '\\':
		return append(out, `\\`...)
	case '\b':
		return append(out, `\b`...)
	case '\f':
		return append(out, `\f`...)
	case '\n':
		return append(out, `\n`...)
	case '\r':
		return append(out, `\r`...)
	case '\t':
		return append(out, `\t`...)
	}
	if r < 0x20 {
		return append(out, `\u00`+string("0123456789abcdef"[r>>4])+string("0123456789abcdef"[r&15])...)
	}
	return utf8.AppendRune(out, r)
}

// appendJSNumber appends f as JavaScript's Number.prototype.toString
// writes it (f is finite).
func appendJSNumber(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0') // -0 too
	}
	if f < 0 {
		out = append(out, '-')
		f = -f
	}
	// Go's shortest digits are the ones ECMAScript's Number::toString picks.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		return append(out, strings.Repeat("0", n-k)...)
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		return append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, "0."...)
		out = append(out, strings.Repeat("0", -n)...)
		return append(out, digits...)
	}
	out = append(out, digits[0])
	if k > 1 {
		out = append(out, '.')
		out = append(out, digits[1:]...)
	}
	out = append(out, 'e')
	if n-1 >= 0 {
		out = append(out, '+')
	}
	return strconv.AppendInt(out, int64(n-1), 10)
}

// jsStringify is JSON.stringify(JSON.parse(raw), null, 2) within
// safeprint's limits (see [Result.Text]); raw that cannot be
// canonicalized is indented as it is.
func jsStringify(raw json.RawMessage) string {
	if canon, ok := jsCanonical(raw); ok {
		raw = canon
	}
	out, err := safeprint.IndentString(raw, nil)
	if err != nil {
		return string(raw)
	}
	return out
}

// jsValue is a JSON value as the reference's JavaScript reads it: nil is
// undefined.
type jsValue json.RawMessage

// get is v?.[key]: the member's value (the last of duplicates), or
// undefined when v is not an object or has no such member.
func (v jsValue) get(key string) jsValue { return v.object().get(key) }

// jsObject is an object's members (the last of duplicates), decoded once
// for several reads; nil for a value that is not an object.
type jsObject map[string]json.RawMessage

// object returns v's members when it is an object.
func (v jsValue) object() jsObject {
	v = jsValue(bytes.TrimSpace(v))
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var members jsObject
	if json.Unmarshal(v, &members) != nil {
		return nil
	}
	return members
}

// get is the member key's value, or undefined.
func (o jsObject) get(key string) jsValue {
	if m, ok := o[key]; ok {
		return jsValue(m)
	}
	return nil
}

// items returns v's elements when it is an array (Array.isArray), else nil.
func (v jsValue) items() ([]jsValue, bool) {
	v = jsValue(bytes.TrimSpace(v))
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		return nil, false
	}
	out := make([]jsValue, len(items))
	for i, it := range items {
		out[i] = jsValue(it)
	}
	return out, true
}

func (v jsValue) undefined() bool { return len(bytes.TrimSpace(v)) == 0 }

// isString reports typeof v === 'string', with its value.
func (v jsValue) isString() (string, bool) {
	v = jsValue(bytes.TrimSpace(v))
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if !utf8.Valid(v) { // Node replaces ill-formed bytes as jsCanonical does
		if c, ok := jsCanonical(v); ok {
			v = jsValue(c)
		}
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// number returns v's value when it is a number (±Inf beyond float64).
func (v jsValue) number() (float64, bool) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// truthy is JavaScript's truthiness: false for undefined, null, false, 0,
// and "".
func (v jsValue) truthy() bool {
	t := bytes.TrimSpace(v)
	switch {
	case len(t) == 0, string(t) == "null", string(t) == "false", string(t) == `""`:
		return false
	}
	if f, ok := v.number(); ok {
		return f != 0
	}
	return true
}

// or is v || def.
func (v jsValue) or(def jsValue) jsValue {
	if v.truthy() {
		return v
	}
	return def
}

// String is JavaScript's String(v), as a template literal writes v:
// objects are "[object Object]", arrays their elements joined with ","
// (null and undefined as "").
func (v jsValue) String() string {
	t := bytes.TrimSpace(v)
	switch {
	case len(t) == 0:
		return "undefined"
	case t[0] == '{':
		return "[object Object]"
	case t[0] == '[':
		items, _ := v.items()
		parts := make([]string, len(items))
		for i, it := range items {
			if s := bytes.TrimSpace(it); len(s) > 0 && string(s) != "null" {
				parts[i] = it.String()
			}
		}
		return strings.Join(parts, ",")
	case t[0] == '"':
		s, _ := v.isString()
		return s
	}
	if f, ok := v.number(); ok {
		switch {
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		}
		return string(appendJSNumber(nil, f))
	}
	return string(t) // true, false, null
}

// jsString is a JavaScript string value.
func jsString(s string) jsValue {
	b, _ := json.Marshal(s)
	return jsValue(b)
}
