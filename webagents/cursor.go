package webagents

import "encoding/json"

// cursor walks JSON text that has already been checked (by strictjson):
// it does no syntax checking of its own, so it must never see text that
// was not. Strings are decoded as encoding/json decodes them.
type cursor struct {
	data []byte
	pos  int
}

func (c *cursor) space() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// skip moves past the value at c.pos.
func (c *cursor) skip() {
	switch c.data[c.pos] {
	case '"':
		c.skipString()
	case '{', '[':
		depth := 0
		for {
			switch c.data[c.pos] {
			case '"':
				c.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					c.pos++
					return
				}
			}
			c.pos++
		}
	default: // a number or a literal
		for c.pos < len(c.data) {
			switch c.data[c.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			c.pos++
		}
	}
}

// skipString moves past the string at c.pos and reports whether it holds
// escapes.
func (c *cursor) skipString() (escaped bool) {
	c.pos++
	for {
		switch c.data[c.pos] {
		case '"':
			c.pos++
			return escaped
		case '\\':
			escaped = true
			c.pos += 2
		default:
			c.pos++
		}
	}
}

// str decodes the string at c.pos.
func (c *cursor) str() string {
	start := c.pos
	if !c.skipString() {
		return string(c.data[start+1 : c.pos-1])
	}
	return c.decodeString(start)
}

// object calls fn for each member of the object at c.pos with its key
// (unescaped; valid during the call) and c.pos at the member's value,
// which fn must move past.
func (c *cursor) object(fn func(key []byte)) {
	c.pos++ // '{'
	c.space()
	if c.data[c.pos] == '}' {
		c.pos++
		return
	}
	for {
		start := c.pos
		var key []byte
		if c.skipString() {
			key = []byte(c.decodeString(start))
		} else {
			key = c.data[start+1 : c.pos-1]
		}
		c.space()
		c.pos++ // ':'
		c.space()
		fn(key)
		c.space()
		if c.data[c.pos] == '}' {
			c.pos++
			return
		}
		c.pos++ // ','
		c.space()
	}
}

// decodeString decodes the string between start and c.pos that holds
// escapes.
func (c *cursor) decodeString(start int) string {
	var s string
	_ = json.Unmarshal(c.data[start:c.pos], &s) // checked: cannot fail
	return s
}

// array calls fn with c.pos at each element of the array at c.pos; fn must
// move past the element.
func (c *cursor) array(fn func()) {
	c.pos++ // '['
	c.space()
	if c.data[c.pos] == ']' {
		c.pos++
		return
	}
	for {
		fn()
		c.space()
		if c.data[c.pos] == ']' {
			c.pos++
			return
		}
		c.pos++ // ','
		c.space()
	}
}

// stringMember decodes a member that encoding/json would decode into a
// *string: a string is present, null is absent, and anything else is
// recorded as w's type error for field.
func (c *cursor) stringMember(w *batchWalk, field string) (string, bool) {
	switch c.data[c.pos] {
	case '"':
		return c.str(), true
	case 'n':
		c.skip()
		return "", false
	default:
		w.wrongType(field)
		c.skip()
		return "", false
	}
}
