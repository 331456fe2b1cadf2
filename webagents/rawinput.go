package webagents

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// The raw walkers read an operation's input from its text: the references
// in it, and the input with them substituted, as the tree walkers
// (walkRefs, substituteRefs and encodeTree) find and write them in
// decodeTree's tree, without building the tree. They answer ok false for
// anything they are not sure of (malformed text, duplicate keys, objects
// of more than maxRawMembers members, nesting deeper than maxRawDepth),
// and the caller then decodes the tree.

// maxRawDepth is the nesting up to which the raw walkers read an input: an
// object's members are scanned once to find its keys and again when they
// are walked, so the text at depth d is read d times. Deeper inputs are
// decoded.
const maxRawDepth = 6

// rawMember is one member of an object: its key as decoded, and the text
// of its value.
type rawMember struct {
	key        []byte
	start, end int
}

// openObject moves past the '{' at p.pos and reports whether the object
// is empty (and then moves past it too).
func (p *treeParser) openObject(depth int) (empty, ok bool) { return p.open(depth, '}') }

// open moves past the '{' or '[' at p.pos, a container nested depth deep,
// and reports whether it is empty: end, its closing byte, follows (and is
// moved past too).
func (p *treeParser) open(depth int, end byte) (empty, ok bool) {
	if depth > maxFastTreeDepth {
		return false, false
	}
	p.pos++
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == end {
		p.pos++
		return true, true
	}
	return false, true
}

// nextMember reads the member at p.pos, the value checked as fastTree
// would decode it, and the ',' or '}' after it; more reports a ','.
func (p *treeParser) nextMember(depth int) (m rawMember, more, ok bool) {
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return m, false, false
	}
	if m.key, ok = p.rawKey(); !ok {
		return m, false, false
	}
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != ':' {
		return m, false, false
	}
	p.pos++
	p.space()
	m.start = p.pos
	if !p.skipStrict(depth) {
		return m, false, false
	}
	m.end = p.pos
	p.space()
	if p.pos >= len(p.data) {
		return m, false, false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		p.space()
		return m, true, true
	case '}':
		p.pos++
		return m, false, true
	}
	return m, false, false
}

// members reads the members of the object at p.pos into buf, refusing
// duplicate keys (the last would win: decodeTree says which) and more
// than len(buf) members.
func (p *treeParser) members(buf *[maxRawMembers]rawMember, depth int) (n int, ok bool) {
	empty, ok := p.openObject(depth)
	if !ok || empty {
		return 0, ok
	}
	for more := true; more; {
		if n == len(buf) {
			return 0, false
		}
		var m rawMember
		if m, more, ok = p.nextMember(depth); !ok {
			return 0, false
		}
		for i := range n {
			if bytes.Equal(buf[i].key, m.key) {
				return 0, false
			}
		}
		buf[n] = m
		n++
	}
	return n, true
}

// rawKey reads a key as decodeTree decodes it: a key written plainly is its
// own text.
func (p *treeParser) rawKey() ([]byte, bool) {
	if raw, ok := p.safeString(); ok {
		return raw, true
	}
	s, ok := p.str()
	return []byte(s), ok
}

// safeString reads the string at p.pos when its bytes are printable ASCII
// other than '"' and '\\': its text is then its value, and appendTreeString
// writes it back as it is.
func (p *treeParser) safeString() ([]byte, bool) {
	for i := p.pos + 1; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			raw := p.data[p.pos+1 : i]
			p.pos = i + 1
			return raw, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// skipStrict moves past the value at p.pos, which it checks as fastTree
// would decode it.
func (p *treeParser) skipStrict(depth int) bool {
	if p.pos >= len(p.data) {
		return false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		empty, ok := p.openObject(depth + 1)
		if !ok || empty {
			return ok
		}
		for more := true; more; {
			if _, more, ok = p.nextMember(depth + 1); !ok {
				return false
			}
		}
		return true
	case c == '[':
		more, ok := p.openArray(depth + 1)
		for ok && more {
			if !p.skipStrict(depth + 1) {
				return false
			}
			more, ok = p.nextElement()
		}
		return ok
	case c == '"':
		return p.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		end := scanNumber(p.data, p.pos)
		p.pos = end
		return end >= 0
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

// skipString moves past the string at p.pos, checking it with JSON's
// grammar as str does (escapes; no control characters; any other bytes,
// which str replaces when they are not UTF-8), without decoding it.
func (p *treeParser) skipString() bool {
	for i := p.pos + 1; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(p.data) {
				return false
			}
			switch p.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(p.data) || !isHex4(p.data[i+1:i+5]) {
					return false
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// openArray moves past the '[' at p.pos; more is false for an empty array
// (then moved past too).
func (p *treeParser) openArray(depth int) (more, ok bool) {
	empty, ok := p.open(depth, ']')
	return ok && !empty, ok
}

// nextElement moves past the ',' or ']' after an element; more reports a
// ','.
func (p *treeParser) nextElement() (more, ok bool) {
	p.space()
	if p.pos >= len(p.data) {
		return false, false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		p.space()
		return true, true
	case ']':
		p.pos++
		return false, true
	}
	return false, false
}

// rawRefWalk is walkRefs and refOperations on the text.
type rawRefWalk struct {
	data    []byte
	targets refTargets // given each well-formed reference's operation when collect is set
	collect bool
	n       int  // references seen
	ok      bool // every one is well-formed
	strings bool // every one's value is a string
}

// walk reads the value at pos and returns where it ends.
func (w *rawRefWalk) walk(pos, depth int) (int, bool) {
	p := treeParser{data: w.data, pos: pos}
	if p.pos >= len(p.data) {
		return 0, false
	}
	switch p.data[p.pos] {
	case '{':
		if depth >= maxRawDepth {
			return 0, false
		}
		var buf [maxRawMembers]rawMember
		n, ok := p.members(&buf, depth+1)
		if !ok {
			return 0, false
		}
		if n == 1 && string(buf[0].key) == "$ref" {
			w.ref(p.data[buf[0].start:buf[0].end])
			return p.pos, true
		}
		for _, m := range buf[:n] {
			if _, ok := w.walk(m.start, depth+1); !ok {
				return 0, false
			}
		}
		return p.pos, true
	case '[':
		if depth >= maxRawDepth {
			return 0, false
		}
		more, ok := p.openArray(depth + 1)
		for ok && more {
			if p.pos, ok = w.walk(p.pos, depth+1); !ok {
				return 0, false
			}
			more, ok = p.nextElement()
		}
		return p.pos, ok
	}
	ok := p.skipStrict(depth)
	return p.pos, ok
}

func (w *rawRefWalk) ref(value []byte) {
	w.n++
	s := ""
	isString := value[0] == '"'
	if isString {
		q := treeParser{data: value}
		if raw, plain := q.safeString(); plain {
			s = string(raw)
		} else {
			s, isString = q.str()
		}
	}
	w.strings = w.strings && isString
	id, _, _, valid := splitReference(s)
	if !isString || !valid {
		w.ok = false
		return
	}
	if w.collect {
		w.targets.add(id)
	}
}

// rawRefOperations is refOperations on the text, with the operations
// given to targets (if not nil), and reports whether every reference's
// value is a string; raw is false when the text must be decoded instead.
func rawRefOperations(data []byte, targets *refTargets) (n int, ok, strings, raw bool) {
	w := rawRefWalk{data: data, ok: true, strings: true}
	if targets != nil {
		// A copy in and out: a pointer kept in w would move targets to
		// the heap.
		w.targets, w.collect = *targets, true
		defer func() { *targets = w.targets }()
	}
	p := treeParser{data: data}
	p.space()
	p.pos, raw = w.walk(p.pos, 0)
	if raw {
		p.space()
	}
	return w.n, w.ok, w.strings, raw && p.pos == len(p.data)
}

// rawResolve is substitution.appendResolved on the text of an input.
type rawResolve struct {
	*substitution
	data []byte
	src  refSource
	out  []byte
	bad  *Reference
}

// appendResolvedRaw is appendResolved on the text of an input: it appends
// encodeTree(substituteRefs(decodeTree(data))). ok is false for text the
// raw walkers are not sure of (the caller then starts again from the tree).
func (r *substitution) appendResolvedRaw(dst, data []byte, src refSource) (out []byte, bad *Reference, ok bool) {
	w := rawResolve{substitution: r, data: data, src: src, out: dst}
	p := treeParser{data: data}
	p.space()
	if p.pos, ok = w.walk(p.pos, 0); ok {
		p.space()
	}
	if !ok || p.pos != len(p.data) {
		return nil, nil, false
	}
	return w.out, w.bad, true
}

// stopped reports whether the walk has its answer: a reference that did
// not resolve, or the budget spent.
func (w *rawResolve) stopped() bool { return w.bad != nil || w.budget < 0 }

// walk writes the value at pos resolved and returns where it ends (once
// stopped, it only reads).
func (w *rawResolve) walk(pos, depth int) (int, bool) {
	p := treeParser{data: w.data, pos: pos}
	if w.stopped() {
		ok := p.skipStrict(depth)
		return p.pos, ok
	}
	if p.pos >= len(p.data) {
		return 0, false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		if depth >= maxRawDepth {
			return 0, false
		}
		var buf [maxRawMembers]rawMember
		n, ok := p.members(&buf, depth+1)
		if !ok {
			return 0, false
		}
		members := buf[:n]
		if n == 1 && string(members[0].key) == "$ref" {
			return p.pos, w.ref(p.data[members[0].start:members[0].end])
		}
		slices.SortFunc(members, func(a, b rawMember) int { return bytes.Compare(a.key, b.key) })
		w.out = append(w.out, '{')
		for i, m := range members {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = appendTreeString(w.out, string(m.key))
			w.out = append(w.out, ':')
			if _, ok := w.walk(m.start, depth+1); !ok {
				return 0, false
			}
		}
		w.out = append(w.out, '}')
		return p.pos, true
	case c == '[':
		if depth >= maxRawDepth {
			return 0, false
		}
		w.out = append(w.out, '[')
		more, ok := p.openArray(depth + 1)
		for first := true; ok && more; first = false {
			if !first {
				w.out = append(w.out, ',')
			}
			if p.pos, ok = w.walk(p.pos, depth+1); !ok {
				return 0, false
			}
			more, ok = p.nextElement()
		}
		w.out = append(w.out, ']')
		return p.pos, ok
	case c == '"':
		if raw, ok := p.safeString(); ok {
			w.out = append(append(append(w.out, '"'), raw...), '"')
			return p.pos, true
		}
		s, ok := p.str()
		w.out = appendTreeString(w.out, s)
		return p.pos, ok
	}
	start := p.pos
	if !p.skipStrict(depth) {
		return 0, false
	}
	w.out = append(w.out, p.data[start:p.pos]...) // a number or a literal, as appendTree writes it
	return p.pos, true
}

// ref writes the value a reference object's value names.
func (w *rawResolve) ref(value []byte) bool {
	s := ""
	if value[0] == '"' {
		q := treeParser{data: value}
		var ok bool
		if s, ok = q.str(); !ok {
			return false
		}
	}
	v, found := resolveReference(s, w.src)
	if !found {
		bad, _ := ParseReference(s) // the zero Reference when s is malformed
		w.bad = &bad
		return true
	}
	at := len(w.out)
	var ok bool
	if w.out, ok = appendTree(w.out, v); !ok {
		return false
	}
	w.budget -= len(w.out) - at
	return true
}

// validJSON is json.Valid, reading what skipStrict reads (which is valid
// JSON) without encoding/json's scanner.
func validJSON(data []byte) bool {
	p := treeParser{data: data}
	p.space()
	if p.skipStrict(0) {
		p.space()
		if p.pos == len(p.data) {
			return true
		}
	}
	return json.Valid(data)
}
