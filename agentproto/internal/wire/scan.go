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
//
// Unlike internal/strictjson, the scanner accepts a \u escape of a lone
// UTF-16 surrogate ("\ud800"), as the reference bridge and the extension
// do: JSON.parse keeps one, and an extension's JSON.stringify writes one for
// text cut in the middle of a pair (an emoji at the end of a snippet). The
// bytes a host relays (payloads, results, events, the request's type) pass
// unchanged, so the JavaScript readers at both ends see what they would see
// through the reference. What the host decodes itself is compared with
// ASCII names and its own ids, where U+FFFD (encoding/json's reading of a
// lone surrogate) and the surrogate decide alike, or shown as text; a
// token, compared with the program's own, is read with [UnquoteExact].
package wire

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// MaxDepth is the deepest nesting of arrays and objects accepted, as in
// internal/strictjson.
const MaxDepth = strictjson.MaxDepth

// SyntaxError reports malformed JSON, worded as encoding/json words it and
// never quoting more than one byte of the input.
type SyntaxError = strictjson.SyntaxError

func syntaxErr(data []byte, pos int, context string) error {
	return strictjson.SyntaxErrorAt(data, pos, context)
}

// tokenErr is syntaxErr inside a literal, a number or a string escape,
// where encoding/json reads the end of the input as a space that ends the
// token too early.
func tokenErr(data []byte, pos int, context string) error {
	if pos >= len(data) {
		return &SyntaxError{Msg: "invalid character ' ' " + context, Offset: pos}
	}
	return syntaxErr(data, pos, context)
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
			return pos, tokenErr(data, pos, "in literal "+lit+" (expecting '"+lit[i:i+1]+"')")
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
	switch {
	case pos < len(data) && data[pos] == '0':
		pos++
	case pos < len(data) && data[pos] >= '1' && data[pos] <= '9':
		pos = skipDigits(data, pos)
	default:
		return pos, tokenErr(data, pos, "in numeric literal")
	}
	if pos < len(data) && data[pos] == '.' {
		pos++
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, tokenErr(data, pos, "after decimal point in numeric literal")
		}
		pos = skipDigits(data, pos)
	}
	if pos < len(data) && (data[pos] == 'e' || data[pos] == 'E') {
		pos++
		if pos < len(data) && (data[pos] == '+' || data[pos] == '-') {
			pos++
		}
		if pos >= len(data) || !isDigit(data[pos]) {
			return pos, tokenErr(data, pos, "in exponent of numeric literal")
		}
		pos = skipDigits(data, pos)
	}
	return pos, nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns a word whose high bit is set in the lowest byte of x
// that is a quote, a backslash, a control character or not ASCII (the
// bytes a string scan must stop at), if there is one; bytes above it may
// be marked too. For a byte that is none of those, neither x^'"' - 1,
// x^'\\' - 1 nor x - 0x20 sets the high bit, nor does a borrow reach it
// unless a byte below was a quote, a backslash or a control character.
func special(x uint64) uint64 {
	q := (x ^ ones*'"') - ones
	b := (x ^ ones*'\\') - ones
	c := x - ones*0x20
	return (q | b | c | x) & highs
}

// nextSpecial returns the offset of the first byte at or after i that a
// string scan must stop at, or, when there is none, the offset of the last
// few bytes (fewer than eight), which the caller checks one at a time.
// Strings are scanned eight bytes at a time, and 32 at a time once a
// string has proved longer than a word.
func nextSpecial(data []byte, i int) int {
	if i+8 > len(data) {
		return i
	}
	if m := special(binary.LittleEndian.Uint64(data[i:])); m != 0 {
		return i + bits.TrailingZeros64(m)>>3
	}
	i += 8
	for i+32 <= len(data) {
		w := data[i : i+32 : i+32]
		m := special(binary.LittleEndian.Uint64(w)) |
			special(binary.LittleEndian.Uint64(w[8:])) |
			special(binary.LittleEndian.Uint64(w[16:])) |
			special(binary.LittleEndian.Uint64(w[24:]))
		if m != 0 {
			break
		}
		i += 32
	}
	for i+8 <= len(data) {
		if m := special(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// skipString validates the string starting at the quote data[pos] and
// returns the offset past its closing quote and whether it has escapes.
func skipString(data []byte, pos int) (end int, escaped bool, err error) {
	i := pos + 1
	for {
		i = nextSpecial(data, i)
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
				return i, escaped, tokenErr(data, i, "in string escape code")
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(data) || !isHex(data[i]) {
						return i, escaped, tokenErr(data, i, "in \\u hexadecimal character escape")
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
		var err error
		var closed bool
		if _, _, _, pos, err = scanMember(data, pos, depth); err != nil {
			return pos, err
		}
		if pos, closed, err = afterElement(data, pos, '}', "after object key:value pair"); err != nil || closed {
			return pos, err
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
		var closed bool
		if pos, err = skipValue(data, pos, depth); err != nil {
			return pos, err
		}
		if pos, closed, err = afterElement(data, pos, ']', "after array element"); err != nil || closed {
			return pos, err
		}
	}
}

// scanMember validates the object member whose key starts at data[pos].
// It returns the offsets of the key's closing quote and of the value's
// start, whether the key has escapes, and the offset just past the value.
func scanMember(data []byte, pos, depth int) (keyEnd, valStart int, escaped bool, end int, err error) {
	if pos >= len(data) || data[pos] != '"' {
		return 0, 0, false, pos, syntaxErr(data, pos, "looking for beginning of object key string")
	}
	if keyEnd, escaped, err = skipString(data, pos); err != nil {
		return 0, 0, false, keyEnd, err
	}
	end = skipSpace(data, keyEnd)
	if end >= len(data) || data[end] != ':' {
		return 0, 0, false, end, syntaxErr(data, end, "after object key")
	}
	valStart = skipSpace(data, end+1)
	end, err = skipValue(data, valStart, depth)
	return keyEnd - 1, valStart, escaped, end, err
}

// afterElement reads what follows an element of an object or array ending
// at data[pos]: a comma, after which it returns the offset of the next
// element, or closer, after which it returns the offset past closer and
// closed. context words the error for anything else.
func afterElement(data []byte, pos int, closer byte, context string) (next int, closed bool, err error) {
	pos = skipSpace(data, pos)
	switch {
	case pos >= len(data):
		return pos, false, syntaxErr(data, pos, "")
	case data[pos] == ',':
		return skipSpace(data, pos+1), false, nil
	case data[pos] == closer:
		return pos + 1, true, nil
	default:
		return pos, false, syntaxErr(data, pos, context)
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
	keyEnd, valStart, escaped, pos, err := scanMember(it.data, it.pos, 1)
	if err != nil {
		it.fail(err)
		return false
	}
	it.cur = Member{Key: it.data[it.pos+1 : keyEnd], KeyEscaped: escaped, Value: it.data[valStart:pos]}
	pos, closed, err := afterElement(it.data, pos, '}', "after object key:value pair")
	switch {
	case err != nil:
		it.fail(err)
		return false
	case closed:
		it.pos = pos
		it.finish()
		return it.err == nil
	}
	it.pos = pos
	return true
}

// Member returns the current member. Valid after Next returned true.
func (it *Members) Member() Member { return it.cur }

// Err returns the first error met, after Next returned false.
func (it *Members) Err() error { return it.err }
