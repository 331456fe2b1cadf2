// Package strictjson checks JSON documents for the parser differences that
// let one document mean two things.
//
// encoding/json matches object keys to struct fields case-insensitively and
// lets the last duplicate key win, so {"token":"a","Token":"b"} decodes to
// "b", while JavaScript, JSON Schema validators and most other parsers see
// "a". Where an input is checked by one parser and consumed by another
// (schema-validated inputs, auth fields), such documents must be refused.
//
// Check refuses duplicate keys and keys that differ only in case within one
// object, at any depth, and strings holding invalid UTF-8 or a \u escape of
// a lone UTF-16 surrogate (which encoding/json would silently replace with
// U+FFFD, so that two different documents decode alike, and which
// JavaScript keeps): the module's one rule for JSON text, the agent
// protocol's too. CheckDuplicates refuses duplicates but not case variants,
// for documents whose keys are data. Unmarshal additionally refuses keys that match a
// struct field of the target only case-insensitively, so a decoded struct
// field always came from a key spelled exactly as its JSON name. Fields walks
// the members of one object without decoding it, for envelopes whose keys
// must be matched exactly.
//
// The package is internal: its API may change with the packages that use it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Check accepts.
// encoding/json itself stops at 10,000; a lower bound keeps the recursive
// scanner's stack small for hostile input.
const MaxDepth = 1000

// ErrDuplicateKey is matched (errors.Is) by a *KeyError for a key that
// appears twice in one object, including keys equal after unescaping.
var ErrDuplicateKey = errors.New("duplicate key")

// ErrCaseVariantKey is matched (errors.Is) by a *KeyError for a key that
// differs only in case from another key of the same object, or from the JSON
// name of a struct field it would be decoded into.
var ErrCaseVariantKey = errors.New("key differs only in case")

// ErrNotObject is returned by Fields when the document is not a JSON object.
var ErrNotObject = errors.New("JSON value is not an object")

// SyntaxError reports malformed JSON. Its message follows encoding/json's
// wording; it never quotes more than one byte of the input.
type SyntaxError struct {
	Msg    string
	Offset int // byte offset at which the error was found
}

func (e *SyntaxError) Error() string { return e.Msg }

// KeyError reports a refused object key. Path is a JSON-pointer-like path of
// the object holding it ("" for the top level); Key is the key as decoded,
// truncated to 64 bytes so that an error string cannot carry a large payload.
// Path's keys are cut alike, the whole to 256 bytes, and characters that
// are not graphic (controls, bidirectional overrides) appear as U+FFFD.
type KeyError struct {
	Path string
	Key  string
	Err  error // ErrDuplicateKey or ErrCaseVariantKey
}

func (e *KeyError) Error() string {
	where := e.Path
	if where == "" {
		where = "/"
	}
	return fmt.Sprintf("strict JSON: %v: %q at %s", e.Err, e.Key, where)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Check reports whether data is one well-formed JSON value with no
// duplicate or case-variant keys in any object, only valid UTF-8 in its
// strings (no lone surrogate escapes), and nesting no deeper than MaxDepth. Leading and trailing white
// space is allowed.
func Check(data []byte) error {
	s := getScanner(data)
	defer putScanner(s)
	return s.document(nil)
}

// CheckDuplicates is Check without the case-variant rule: it refuses
// duplicate keys (equal after unescaping) but accepts keys that differ only
// in case, for documents whose keys are data rather than field names (a
// JSON Schema's "properties" may name both "id" and "ID").
func CheckDuplicates(data []byte) error {
	s := getScanner(data)
	defer putScanner(s)
	s.exactKeys = true
	return s.document(nil)
}

// scanners holds scanners whose stacks have grown, so that steady-state
// checks allocate nothing.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

func getScanner(data []byte) *scanner {
	s := scanners.Get().(*scanner)
	s.data, s.pos = data, 0
	return s
}

func putScanner(s *scanner) {
	// Drop references into the caller's data.
	clear(s.keys[:cap(s.keys)])
	clear(s.stack[:cap(s.stack)])
	s.data, s.stack, s.keys, s.exactKeys = nil, s.stack[:0], s.keys[:0], false
	scanners.Put(s)
}

// Unmarshal is json.Unmarshal after Check, and after checking that every
// object key that case-insensitively matches a field of the struct it is
// decoded into matches that field's JSON name exactly. Keys that match no
// field are left to encoding/json (which ignores them).
func Unmarshal(data []byte, v any) error {
	if err := CheckInto(data, v); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// CheckInto runs the checks of Unmarshal(data, v) without decoding: it
// returns the error Unmarshal would return before decoding (nil when
// Unmarshal would go on to json.Unmarshal), for callers that decode the
// checked document themselves. v is a non-nil pointer to the target type
// and is not written.
func CheckInto(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	s := getScanner(data)
	defer putScanner(s)
	return s.document(rv.Type().Elem())
}

// Fields calls fn for each member of the JSON object in data, in document
// order, with the member's key (unescaped) and its raw value with surrounding
// white space removed. The whole document is checked as by Check before fn
// is first called. key is only valid during the call. An error from fn stops
// the walk and is returned as is.
func Fields(data []byte, fn func(key []byte, value []byte) error) error {
	if err := Check(data); err != nil {
		return err
	}
	s := getScanner(data)
	defer putScanner(s)
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return ErrNotObject
	}
	s.pos++
	var keyBuf []byte
	s.skipSpace()
	if s.data[s.pos] == '}' {
		return nil
	}
	for {
		rawKey, escaped, _ := s.str()
		key := rawKey
		if escaped {
			keyBuf = appendUnescaped(keyBuf[:0], rawKey)
			key = keyBuf
		}
		s.skipSpace()
		s.pos++ // ':'
		s.skipSpace()
		start := s.pos
		_ = s.value(nil, 1)
		if err := fn(key, s.data[start:s.pos]); err != nil {
			return err
		}
		s.skipSpace()
		if s.data[s.pos] == '}' {
			return nil
		}
		s.pos++ // ','
		s.skipSpace()
	}
}

// scanner is a recursive-descent JSON validator. Data already accepted by a
// successful pass can be walked again by the same methods without errors.
type scanner struct {
	data  []byte
	pos   int
	stack []pathStep // path to the current value, for error messages
	keys  [][]byte   // keys of the objects being scanned, innermost last
	// exactKeys accepts keys that differ only in case (CheckDuplicates).
	exactKeys bool
}

func (s *scanner) document(t reflect.Type) error {
	s.skipSpace()
	if err := s.value(t, 0); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.syntax("after top-level value")
	}
	return nil
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) syntax(context string) error {
	return SyntaxErrorAt(s.data, s.pos, context)
}

// SyntaxErrorAt returns the error for malformed JSON found at data[pos],
// worded as encoding/json words it: "unexpected end of JSON input" when pos
// is at the end of data, else "invalid character 'c' " followed by
// context (such as "looking for beginning of value"). It quotes only the
// one byte at pos. Other scanners of this module use it so that every
// parser reports errors alike.
func SyntaxErrorAt(data []byte, pos int, context string) *SyntaxError {
	if pos >= len(data) {
		return &SyntaxError{Msg: "unexpected end of JSON input", Offset: pos}
	}
	return &SyntaxError{Msg: "invalid character " + quoteChar(data[pos]) + " " + context, Offset: pos}
}

// quoteChar quotes c as encoding/json's messages do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// value scans one JSON value. t is the Go type it would be decoded into
// (nil when unknown or irrelevant).
func (s *scanner) value(t reflect.Type, depth int) error {
	if s.pos >= len(s.data) {
		return s.syntax("")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(t, depth+1)
	case c == '[':
		return s.array(t, depth+1)
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.syntax("looking for beginning of value")
	}
}

func (s *scanner) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != lit[i] {
			return s.syntax("in literal " + lit + " (expecting " + quoteChar(lit[i]) + ")")
		}
		s.pos++
	}
	return nil
}

func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(s.data) {
		return s.syntax("")
	}
	switch c := s.data[s.pos]; {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.syntax("in numeric literal")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.pos >= len(s.data) || !isDigit(s.data[s.pos]) {
			return s.syntax("after decimal point in numeric literal")
		}
		s.digits()
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.pos >= len(s.data) || !isDigit(s.data[s.pos]) {
			return s.syntax("in exponent of numeric literal")
		}
		s.digits()
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (s *scanner) digits() {
	for s.pos < len(s.data) && isDigit(s.data[s.pos]) {
		s.pos++
	}
}

// str scans a string starting at its opening quote and returns its raw
// contents (between the quotes) and whether they contain escapes.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	s.pos++ // opening quote
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw = s.data[start:s.pos]
			s.pos++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.data) {
				return nil, false, s.syntax("")
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				at := s.pos - 2
				r, err := s.hex4()
				if err != nil {
					return nil, false, err
				}
				// encoding/json would decode a lone surrogate as U+FFFD,
				// where JavaScript keeps it: two readings of one document.
				// Refuse it as invalid UTF-8 is refused.
				switch {
				case r >= 0xdc00 && r <= 0xdfff:
					return nil, false, &SyntaxError{Msg: loneSurrogate, Offset: at}
				case r >= 0xd800 && r <= 0xdbff:
					if s.pos+1 >= len(s.data) || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
						return nil, false, &SyntaxError{Msg: loneSurrogate, Offset: at}
					}
					s.pos += 2
					low, err := s.hex4()
					if err != nil {
						return nil, false, err
					}
					if low < 0xdc00 || low > 0xdfff {
						return nil, false, &SyntaxError{Msg: loneSurrogate, Offset: at}
					}
				}
			default:
				return nil, false, s.syntax("in string escape code")
			}
		case c < 0x20:
			return nil, false, s.syntax("in string literal")
		case c >= utf8.RuneSelf:
			// encoding/json would replace invalid bytes with U+FFFD, so two
			// different documents would decode alike: refuse them, as the
			// agent protocol does.
			r, size := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, &SyntaxError{Msg: "invalid UTF-8 in string", Offset: s.pos}
			}
			s.pos += size
		default:
			s.pos++
		}
	}
	return nil, false, s.syntax("")
}

// loneSurrogate is the SyntaxError message for a \u escape of a UTF-16
// surrogate that is not half of a pair, which no UTF-8 text can hold.
const loneSurrogate = "invalid UTF-8 in string: lone surrogate escape"

// hex4 reads the four hexadecimal digits of a \u escape.
func (s *scanner) hex4() (rune, error) {
	var r rune
	for i := 0; i < 4; i++ {
		if s.pos >= len(s.data) || !isHex(s.data[s.pos]) {
			return 0, s.syntax("in \\u hexadecimal character escape")
		}
		c := s.data[s.pos]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
		s.pos++
	}
	return r, nil
}

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// pathStep is one step of the path to the value being scanned: an object
// key, or an array index when key is nil. Paths are only rendered when an
// error is reported.
type pathStep struct {
	key   []byte
	index int
}

// maxPathBytes bounds a KeyError's Path. Its keys are the sender's: each
// is cut to 64 bytes as Key is, and the path to maxPathBytes bytes (then
// "…"), so that an error string cannot carry a large payload.
const maxPathBytes = 256

func (s *scanner) path() string {
	var b strings.Builder
	for _, p := range s.stack {
		if b.Len() > maxPathBytes {
			break
		}
		b.WriteByte('/')
		if p.key != nil {
			writePathKey(&b, shortKey(p.key))
		} else {
			b.WriteString(strconv.Itoa(p.index))
		}
	}
	path := b.String()
	if len(path) > maxPathBytes {
		cut := maxPathBytes
		for cut > 0 && !utf8.RuneStart(path[cut]) {
			cut--
		}
		path = path[:cut] + "…"
	}
	return path
}

// writePathKey writes key as a JSON Pointer segment ("~" as "~0", "/" as
// "~1"), with characters that are not graphic (controls, format characters
// such as bidirectional overrides, U+2028, U+2029) written as U+FFFD, as
// the path reaches logs and terminals.
func writePathKey(b *strings.Builder, key string) {
	for _, r := range key {
		switch {
		case r == '~':
			b.WriteString("~0")
		case r == '/':
			b.WriteString("~1")
		case !unicode.IsGraphic(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
}

// smallObject is the number of keys up to which duplicates are found by
// comparing every pair; larger objects use a map of folded keys.
const smallObject = 16

func (s *scanner) object(t reflect.Type, depth int) error {
	if depth > MaxDepth {
		return &SyntaxError{Msg: "exceeded max depth", Offset: s.pos}
	}
	fields := structFields(t)
	var elemType reflect.Type
	if t != nil {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			elemType = t.Elem()
		}
	}
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	first := len(s.keys)
	defer func() { s.keys = s.keys[:first] }()
	var folded map[string]struct{}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("looking for beginning of object key string")
		}
		rawKey, escaped, err := s.str()
		if err != nil {
			return err
		}
		key := rawKey
		if escaped {
			key = appendUnescaped(nil, rawKey)
		}
		if dup := s.checkNewKey(first, &folded, key); dup != nil {
			return &KeyError{Path: s.path(), Key: shortKey(key), Err: dup}
		}
		valueType := elemType
		if fields != nil {
			f, err := fields.lookup(key)
			if err != nil {
				return &KeyError{Path: s.path(), Key: shortKey(key), Err: err}
			}
			valueType = f
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("after object key")
		}
		s.pos++
		s.skipSpace()
		s.stack = append(s.stack, pathStep{key: key})
		if err := s.value(valueType, depth); err != nil {
			return err
		}
		s.stack = s.stack[:len(s.stack)-1]
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.syntax("")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return nil
		default:
			return s.syntax("after object key:value pair")
		}
	}
}

// checkNewKey records key among the keys of the object whose first key is
// s.keys[first] and returns ErrDuplicateKey or ErrCaseVariantKey when it
// collides with an earlier one.
func (s *scanner) checkNewKey(first int, folded *map[string]struct{}, key []byte) error {
	keys := s.keys[first:]
	if s.exactKeys {
		return s.checkNewExactKey(first, folded, key)
	}
	if *folded != nil {
		f := foldKey(key)
		if _, dup := (*folded)[f]; dup {
			return collision(keys, key)
		}
		(*folded)[f] = struct{}{}
		s.keys = append(s.keys, key)
		return nil
	}
	for _, k := range keys {
		if bytes.EqualFold(k, key) {
			return collision(keys, key)
		}
	}
	s.keys = append(s.keys, key)
	if len(keys)+1 == smallObject {
		*folded = make(map[string]struct{}, 2*smallObject)
		for _, k := range s.keys[first:] {
			(*folded)[foldKey(k)] = struct{}{}
		}
	}
	return nil
}

// checkNewExactKey is checkNewKey for CheckDuplicates: only equal keys
// collide.
func (s *scanner) checkNewExactKey(first int, seen *map[string]struct{}, key []byte) error {
	keys := s.keys[first:]
	if *seen != nil {
		if _, dup := (*seen)[string(key)]; dup {
			return ErrDuplicateKey
		}
		(*seen)[string(key)] = struct{}{}
		s.keys = append(s.keys, key)
		return nil
	}
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return ErrDuplicateKey
		}
	}
	s.keys = append(s.keys, key)
	if len(keys)+1 == smallObject {
		*seen = make(map[string]struct{}, 2*smallObject)
		for _, k := range s.keys[first:] {
			(*seen)[string(k)] = struct{}{}
		}
	}
	return nil
}

func collision(keys [][]byte, key []byte) error {
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return ErrDuplicateKey
		}
	}
	return ErrCaseVariantKey
}

// foldKey maps a key to a form equal for exactly the keys bytes.EqualFold
// treats as equal: each rune to the smallest rune of its case-folding orbit.
func foldKey(key []byte) string {
	var b strings.Builder
	b.Grow(len(key))
	for len(key) > 0 {
		r, size := utf8.DecodeRune(key)
		key = key[size:]
		b.WriteRune(smallestFold(r))
	}
	return b.String()
}

func smallestFold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < least {
			least = f
		}
	}
	return least
}

func shortKey(key []byte) string {
	const limit = 64
	if len(key) <= limit {
		return string(key)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return string(key[:cut]) + "…"
}

// appendUnescaped decodes the contents of a valid JSON string literal.
func appendUnescaped(dst, raw []byte) []byte {
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, raw...)
	quoted = append(quoted, '"')
	var out string
	if err := json.Unmarshal(quoted, &out); err != nil {
		// raw was validated by the scanner; this cannot happen.
		return append(dst, raw...)
	}
	return append(dst, out...)
}

func (s *scanner) array(t reflect.Type, depth int) error {
	if depth > MaxDepth {
		return &SyntaxError{Msg: "exceeded max depth", Offset: s.pos}
	}
	var elemType reflect.Type
	if t != nil {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			elemType = t.Elem()
		}
	}
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		s.stack = append(s.stack, pathStep{index: i})
		if err := s.value(elemType, depth); err != nil {
			return err
		}
		s.stack = s.stack[:len(s.stack)-1]
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.syntax("")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case ']':
			s.pos++
			return nil
		default:
			return s.syntax("after array element")
		}
	}
}

// fieldSet holds the JSON names of a struct type's fields as encoding/json
// sees them (tags, promotion of embedded structs, "-").
type fieldSet struct {
	names map[string]reflect.Type
}

// lookup returns the type a key decodes into, nil for a key no field takes,
// or ErrCaseVariantKey for a key that some field would take only by folding.
func (f *fieldSet) lookup(key []byte) (reflect.Type, error) {
	if t, ok := f.names[string(key)]; ok {
		return t, nil
	}
	for name := range f.names {
		if bytes.EqualFold([]byte(name), key) {
			return nil, ErrCaseVariantKey
		}
	}
	return nil, nil
}

var fieldCache sync.Map // reflect.Type → *fieldSet

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// structFields returns the field set of t when values of t are decoded by
// encoding/json's struct rules, else nil.
func structFields(t reflect.Type) *fieldSet {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		if customDecoder(t) {
			return nil
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || customDecoder(t) {
		return nil
	}
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fieldSet)
	}
	set := &fieldSet{names: map[string]reflect.Type{}}
	collectFields(t, set.names, 0)
	f, _ := fieldCache.LoadOrStore(t, set)
	return f.(*fieldSet)
}

func customDecoder(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)
}

func collectFields(t reflect.Type, names map[string]reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, names, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if _, taken := names[name]; !taken || depth == 0 {
			names[name] = sf.Type
		}
	}
}
