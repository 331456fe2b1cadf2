// Package wire holds the agent protocol's hot-path JSON handling: a fast
// validating scanner that finds an envelope's top-level members without
// decoding them, and helpers to splice raw values into outgoing frames.
//
// encoding/json validates at about 200 MB/s and internal/strictjson at
// about 350 MB/s; a relay of multi-megabyte results cannot afford either.
// The scanner here checks the same grammar (RFC 8259, with encoding/json's
// acceptance of invalid UTF-8 left out: strings must be valid UTF-8, as
// Chrome requires of every message) and scans string contents eight bytes
// at a time.
package wire

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects accepted.
const MaxDepth = 1000

// SyntaxError reports malformed JSON. Its message follows encoding/json's
// wording and never quotes more than one byte of the input.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string { return e.Msg }

func syntaxErr(data []byte, pos int, context string) error {
	if pos >= len(data) {
		return &SyntaxError{Msg: "unexpected end of JSON input", Offset: pos}
	}
	return &SyntaxError{Msg: "invalid character " + quoteChar(data[pos]) + " " + context, Offset: pos}
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c >= 0x20 && c < 0x7f:
		return "'" + string(rune(c)) + "'"
	default:
		return strconv.Quote(string(rune(c)))
	}
}

// Valid reports whether data is exactly one JSON value, with white space
// around it allowed, and returns the syntax error when it is not.
func Valid(data []byte) error {
	pos := skipSpace(data, 0)
	end, err := skipValue(data, pos, 0)
	if err != nil {
		return err
	}
	end = skipSpace(data, end)
	if end < len(data) {
		return syntaxErr(data, end, "after top-level value")
	}
	return nil
}

func skipSpace(data []byte, pos int) int {
	for pos < len(data) {
		switch data[pos] {
		case ' ', '\t', '\n', '\r':
			pos++
		default:
			return pos
		}
	}
	return pos
}

// skipValue validates the value starting at data[pos] and returns the
// offset just past it.
func skipValue(data []byte, pos, depth int) (int, error) {
	if pos >= len(data) {
		return pos, syntaxErr(data, pos, "")
	}
	switch c := data[pos]; {
	case c == '"':
		end, _, err := skipString(data, pos)
		return end, err
	case c == '{':
		return skipObject(data, pos, depth+1)
	case c == '[':
		return skipArray(data, pos, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(data, pos)
	case c == 't':
		return skipLiteral(data, pos, "true")
	case c == 'f':
		return skipLiteral(data, pos, "false")
	case c == 'n':
		return skipLiteral(data, pos, "null")
	default:
		return pos, syntaxErr(data, pos, "looking for beginning of value")
	}
}

func skipLiteral(data []byte, pos int, lit string) (int, error) {
	for i := 0; i < len(lit); i++ {
		if pos >= len(data) || data[pos] != lit[i] {
			return pos, syntaxErr(data, pos, "in literal "+lit+" (expecting "+quoteChar(lit[i])+")")
		}
		pos++
	}
	return pos, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(data []byte, pos int) int {
	for pos < len(data) && isDigit(data[pos]) {
		pos++
	}
	return pos
}

func skipNumber(data []byte, pos int) (int, error) {
	if data[pos] == '-' {
		pos++
	}
	if pos >= len(data) {
		return pos, syntaxErr(data, pos, "")
	}
	switch c := data[pos]; {
	case c == '0':
		pos++
	case c >= '1' && c <= '9':
		pos = skipDigits(data, pos)
	default:
		return pos, syntaxErr(data, pos, "in numeric literal")
	}
	if pos < len(data) && data[pos] == '.' {
		pos++
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, syntaxErr(data, pos, "after decimal point in numeric literal")
		}
		pos = skipDigits(data, pos)
	}
	if pos < len(data) && (data[pos] == 'e' || data[pos] == 'E') {
		pos++
		if pos < len(data) && (data[pos] == '+' || data[pos] == '-') {
			pos++
		}
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, syntaxErr(data, pos, "in exponent of numeric literal")
		}
		pos = skipDigits(data, pos)
	}
	return pos, nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a word whose high bit is set in each byte of x that is a
// quote, a backslash, a control character or not ASCII: the bytes a string
// scan must stop at.
func special(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	hasQ := (q - ones) &^ q
	hasB := (b - ones) &^ b
	ctl := (x - ones*0x20) &^ x
	return (hasQ | hasB | ctl | x) & highs
}

// skipString validates the string starting at the quote data[pos] and
// returns the offset past its closing quote and whether it has escapes.
func skipString(data []byte, pos int) (end int, escaped bool, err error) {
	i := pos + 1
	for {
		for i+8 <= len(data) {
			m := special(binary.LittleEndian.Uint64(data[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(data) {
			return i, escaped, syntaxErr(data, i, "")
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			i++
			if i >= len(data) {
				return i, escaped, syntaxErr(data, i, "")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(data) || !isHex(data[i]) {
						return i, escaped, syntaxErr(data, i, "in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				return i, escaped, syntaxErr(data, i, "in string escape code")
			}
		case c < 0x20:
			return i, escaped, syntaxErr(data, i, "in string literal")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return i, escaped, &SyntaxError{Msg: "invalid UTF-8 in string", Offset: i}
			}
			i += size
		default:
			i++ // a byte before the last eight of the input
		}
	}
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipObject(data []byte, pos, depth int) (int, error) {
	if depth > MaxDepth {
		return pos, &SyntaxError{Msg: "exceeded max depth", Offset: pos}
	}
	pos = skipSpace(data, pos+1)
	if pos < len(data) && data[pos] == '}' {
		return pos + 1, nil
	}
	for {
		if pos >= len(data) || data[pos] != '"' {
			return pos, syntaxErr(data, pos, "looking for beginning of object key string")
		}
		var err error
		if pos, _, err = skipString(data, pos); err != nil {
			return pos, err
		}
		pos = skipSpace(data, pos)
		if pos >= len(data) || data[pos] != ':' {
			return pos, syntaxErr(data, pos, "after object key")
		}
		pos = skipSpace(data, pos+1)
		if pos, err = skipValue(data, pos, depth); err != nil {
			return pos, err
		}
		pos = skipSpace(data, pos)
		if pos >= len(data) {
			return pos, syntaxErr(data, pos, "")
		}
		switch data[pos] {
		case ',':
			pos = skipSpace(data, pos+1)
		case '}':
			return pos + 1, nil
		default:
			return pos, syntaxErr(data, pos, "after object key:value pair")
		}
	}
}

func skipArray(data []byte, pos, depth int) (int, error) {
	if depth > MaxDepth {
		return pos, &SyntaxError{Msg: "exceeded max depth", Offset: pos}
	}
	pos = skipSpace(data, pos+1)
	if pos < len(data) && data[pos] == ']' {
		return pos + 1, nil
	}
	for {
		var err error
		if pos, err = skipValue(data, pos, depth); err != nil {
			return pos, err
		}
		pos = skipSpace(data, pos)
		if pos >= len(data) {
			return pos, syntaxErr(data, pos, "")
		}
		switch data[pos] {
		case ',':
			pos = skipSpace(data, pos+1)
		case ']':
			return pos + 1, nil
		default:
			return pos, syntaxErr(data, pos, "after array element")
		}
	}
}

// ErrNotObject is returned by Members for a document that is valid JSON but
// not an object.
var ErrNotObject = errors.New("JSON value is not an object")

// Member is one top-level member of an object: its key as written between
// the quotes (escapes not decoded; see KeyEscaped) and its raw value with
// surrounding white space removed, a sub-slice of the document.
type Member struct {
	Key        []byte
	KeyEscaped bool
	Value      []byte
}

// Members walks the top-level members of a JSON object in document order,
// validating the whole document as it goes:
//
//	var it wire.Members
//	it.Reset(data)
//	for it.Next() {
//		m := it.Member()
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// The document is valid only once Next has returned false with a nil Err:
// stopping early leaves the rest unchecked. A Members is an iterator rather
// than a callback so that hot paths allocate nothing.
type Members struct {
	data []byte
	pos  int
	err  error
	cur  Member
	done bool
}

// Reset starts a walk over the object in data.
func (it *Members) Reset(data []byte) {
	*it = Members{data: data}
	pos := skipSpace(data, 0)
	if pos >= len(data) {
		it.fail(syntaxErr(data, pos, ""))
		return
	}
	if data[pos] != '{' {
		if err := Valid(data); err != nil {
			it.fail(err)
		} else {
			it.fail(ErrNotObject)
		}
		return
	}
	pos = skipSpace(data, pos+1)
	if pos < len(data) && data[pos] == '}' {
		it.pos = pos + 1
		it.finish()
		return
	}
	it.pos = pos
}

func (it *Members) fail(err error) { it.err, it.done = err, true }

// finish checks that nothing but white space follows the object.
func (it *Members) finish() {
	it.done = true
	if end := skipSpace(it.data, it.pos); end < len(it.data) {
		it.err = syntaxErr(it.data, end, "after top-level value")
	}
}

// Next advances to the next member and reports whether there is one.
func (it *Members) Next() bool {
	if it.done {
		return false
	}
	data, pos := it.data, it.pos
	if pos >= len(data) || data[pos] != '"' {
		it.fail(syntaxErr(data, pos, "looking for beginning of object key string"))
		return false
	}
	keyEnd, escaped, err := skipString(data, pos)
	if err != nil {
		it.fail(err)
		return false
	}
	key := data[pos+1 : keyEnd-1]
	pos = skipSpace(data, keyEnd)
	if pos >= len(data) || data[pos] != ':' {
		it.fail(syntaxErr(data, pos, "after object key"))
		return false
	}
	pos = skipSpace(data, pos+1)
	start := pos
	if pos, err = skipValue(data, pos, 1); err != nil {
		it.fail(err)
		return false
	}
	it.cur = Member{Key: key, KeyEscaped: escaped, Value: data[start:pos]}
	pos = skipSpace(data, pos)
	switch {
	case pos >= len(data):
		it.fail(syntaxErr(data, pos, ""))
		return false
	case data[pos] == ',':
		it.pos = skipSpace(data, pos+1)
	case data[pos] == '}':
		it.pos = pos + 1
		it.finish()
		if it.err != nil {
			return false
		}
	default:
		it.fail(syntaxErr(data, pos, "after object key:value pair"))
		return false
	}
	return true
}

// Member returns the current member. Valid after Next returned true.
func (it *Members) Member() Member { return it.cur }

// Err returns the first error met, after Next returned false.
func (it *Members) Err() error { return it.err }
