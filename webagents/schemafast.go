package webagents

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// simpleSchema is a fast path for the inputSchema most manifests publish:
// an object whose properties have a type (scalar or not), perhaps a string
// enum or length bounds, and a list of required names. It answers only
// "valid for certain": everything else (an invalid input, whose problems
// the validator words, or a case it does not decide) goes to the
// validator, so results and messages are the validator's.
// FuzzSimpleSchema checks it against the validator.
type simpleSchema struct {
	props    map[string]*simpleProperty
	required []string
	closed   bool // additionalProperties: false
}

// simpleProperty is one property's schema.
type simpleProperty struct {
	types     simpleTypes // 0 means any type
	enum      []string    // nil means no enum
	minLength int         // -1 when absent
	maxLength int         // -1 when absent
}

// simpleTypes is a set of JSON Schema type names.
type simpleTypes uint8

const (
	typeNull simpleTypes = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var simpleTypeNames = map[string]simpleTypes{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString,
}

// annotationKeywords change nothing a validation decides.
var annotationKeywords = map[string]bool{
	"title": true, "description": true, "$comment": true, "examples": true,
	"default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// compileSimpleSchema returns the fast path of a published schema (decoded
// as decodeTree does), or nil when the schema uses anything beyond the
// keywords simpleSchema decides. The schema has been compiled by the
// validator, so its keywords have the shapes the meta-schema requires.
func compileSimpleSchema(tree any) *simpleSchema {
	root, ok := tree.(map[string]any)
	if !ok {
		return nil
	}
	s := &simpleSchema{props: map[string]*simpleProperty{}}
	for k, v := range root {
		switch {
		case annotationKeywords[k]:
		case k == "type":
			// Only "object": the input is always an object, and another
			// type would make every input invalid.
			if t, ok := parseSimpleTypes(v); !ok || t != typeObject {
				return nil
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, ps := range props {
				p := compileSimpleProperty(ps)
				if p == nil {
					return nil
				}
				s.props[name] = p
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range list {
				name, ok := e.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case k == "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			s.closed = !b
		default:
			return nil
		}
	}
	return s
}

func compileSimpleProperty(v any) *simpleProperty {
	if b, ok := v.(bool); ok {
		if !b {
			return nil // false: a present property is invalid
		}
		return &simpleProperty{minLength: -1, maxLength: -1}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	p := &simpleProperty{minLength: -1, maxLength: -1}
	for k, v := range m {
		switch {
		case annotationKeywords[k]:
		case k == "type":
			if p.types, ok = parseSimpleTypes(v); !ok {
				return nil
			}
		case k == "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			p.enum = make([]string, 0, len(list))
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				p.enum = append(p.enum, s)
			}
		case k == "minLength" || k == "maxLength":
			n, ok := v.(json.Number)
			if !ok {
				return nil
			}
			i, err := strconv.Atoi(string(n))
			if err != nil || i < 0 {
				return nil
			}
			if k == "minLength" {
				p.minLength = i
			} else {
				p.maxLength = i
			}
		default:
			return nil
		}
	}
	return p
}

// parseSimpleTypes reads a "type" keyword: a name or a non-empty list of
// names.
func parseSimpleTypes(v any) (simpleTypes, bool) {
	switch v := v.(type) {
	case string:
		t, ok := simpleTypeNames[v]
		return t, ok
	case []any:
		var set simpleTypes
		for _, e := range v {
			name, ok := e.(string)
			if !ok || simpleTypeNames[name] == 0 {
				return 0, false
			}
			set |= simpleTypeNames[name]
		}
		return set, set != 0
	}
	return 0, false
}

// valid reports whether the input (decoded by decodeTree) certainly
// matches the schema; false means the validator decides.
func (s *simpleSchema) valid(tree any) bool {
	obj, ok := tree.(map[string]any)
	if !ok {
		return false
	}
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	if s.closed && len(obj) > len(s.props) {
		return false
	}
	for name, v := range obj {
		p := s.props[name]
		if p == nil {
			if s.closed {
				return false
			}
			continue
		}
		if !p.valid(v) {
			return false
		}
	}
	return true
}

func (p *simpleProperty) valid(v any) bool {
	if p.types != 0 && !p.types.has(v) {
		return false
	}
	str, isString := v.(string)
	if p.enum != nil {
		if !isString {
			return false
		}
		found := false
		for _, e := range p.enum {
			if e == str {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if isString && (p.minLength >= 0 || p.maxLength >= 0) {
		n := utf8.RuneCountInString(str)
		if (p.minLength >= 0 && n < p.minLength) || (p.maxLength >= 0 && n > p.maxLength) {
			return false
		}
	}
	return true
}

// has reports whether v is certainly of one of the types of t.
func (t simpleTypes) has(v any) bool {
	switch v := v.(type) {
	case nil:
		return t&typeNull != 0
	case bool:
		return t&typeBoolean != 0
	case map[string]any:
		return t&typeObject != 0
	case []any:
		return t&typeArray != 0
	case string:
		return t&typeString != 0
	case json.Number:
		if t&typeNumber != 0 {
			return true
		}
		// An integer written without a fraction or an exponent; other
		// spellings of integers (1.0, 1e3) are left to the validator.
		return t&typeInteger != 0 && isPlainInteger(string(v))
	}
	return false
}

func isPlainInteger(n string) bool {
	if n != "" && n[0] == '-' {
		n = n[1:]
	}
	return n != "" && isDigits(n)
}

// maxRawMembers is the most members validRaw reads; larger inputs are
// decoded.
const maxRawMembers = 16

// validRaw is decodeTree, the checks validateTree makes before it
// validates (numbers in range, the step budget) and valid, read from the
// input's text without decoding it, for a flat object whose keys and
// strings have no escapes. false means: decode and validate.
func (s *simpleSchema) validRaw(input []byte, cost *schemaCost) bool {
	if len(s.required) > 64 {
		return false
	}
	p := treeParser{data: input}
	p.space()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return false
	}
	p.pos++
	p.space()
	var keys [maxRawMembers][]byte
	var required uint64
	n, size := 0, 1
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
	} else {
		for {
			if n == maxRawMembers {
				return false
			}
			key, ok := p.plainString()
			if !ok {
				return false
			}
			for _, k := range keys[:n] {
				if string(k) == string(key) {
					return false // the last would win: let decodeTree say
				}
			}
			keys[n] = key
			n++
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return false
			}
			p.pos++
			p.space()
			v, ok := p.rawScalar()
			if !ok {
				return false
			}
			size += 1 + len(key)/stringBytesPerStep
			if v.kind == typeString {
				size += len(v.raw) / stringBytesPerStep
			}
			if prop := s.props[string(key)]; prop != nil {
				if !prop.validRaw(v) {
					return false
				}
			} else if s.closed {
				return false
			}
			for i, name := range s.required {
				if name == string(key) {
					required |= 1 << i
				}
			}
			p.space()
			if p.pos >= len(p.data) {
				return false
			}
			if p.data[p.pos] == '}' {
				p.pos++
				break
			}
			if p.data[p.pos] != ',' {
				return false
			}
			p.pos++
			p.space()
		}
	}
	p.space()
	if p.pos != len(p.data) || required != 1<<len(s.required)-1 {
		return false
	}
	depth := 0
	if n > 0 {
		depth = 1
	}
	c := cost.at(depth)
	return c < costCap && c*int64(size) <= maxValidationSteps
}

// rawValue is a scalar as validRaw reads it: its type (typeString,
// typeNumber, typeBoolean or typeNull) and its text (a string's without
// the quotes).
type rawValue struct {
	kind simpleTypes
	raw  []byte
}

// plainString reads the string at p.pos when it has no escapes, no control
// characters and is valid UTF-8 (so that its text is its value).
func (p *treeParser) plainString() ([]byte, bool) {
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return nil, false
	}
	ascii := true
	for i := p.pos + 1; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			raw := p.data[p.pos+1 : i]
			if !ascii && !utf8.Valid(raw) {
				return nil, false
			}
			p.pos = i + 1
			return raw, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// rawScalar reads the scalar at p.pos: a plain string, a number whose
// exponent is in range, true, false or null.
func (p *treeParser) rawScalar() (rawValue, bool) {
	if p.pos >= len(p.data) {
		return rawValue{}, false
	}
	switch c := p.data[p.pos]; {
	case c == '"':
		raw, ok := p.plainString()
		return rawValue{kind: typeString, raw: raw}, ok
	case c == '-' || (c >= '0' && c <= '9'):
		end := scanNumber(p.data, p.pos)
		if end < 0 {
			return rawValue{}, false
		}
		raw := p.data[p.pos:end]
		p.pos = end
		return rawValue{kind: typeNumber, raw: raw}, numberInRange(string(raw))
	case c == 't':
		return rawValue{kind: typeBoolean}, p.literal("true")
	case c == 'f':
		return rawValue{kind: typeBoolean}, p.literal("false")
	case c == 'n':
		return rawValue{kind: typeNull}, p.literal("null")
	}
	return rawValue{}, false
}

// validRaw is valid for a scalar validRaw read.
func (p *simpleProperty) validRaw(v rawValue) bool {
	if p.types != 0 {
		ok := p.types&v.kind != 0 ||
			(v.kind == typeNumber && p.types&typeInteger != 0 && isPlainInteger(string(v.raw)))
		if !ok {
			return false
		}
	}
	if p.enum != nil {
		if v.kind != typeString || !slices.Contains(p.enum, string(v.raw)) {
			return false
		}
	}
	if v.kind == typeString && (p.minLength >= 0 || p.maxLength >= 0) {
		n := utf8.RuneCount(v.raw)
		if (p.minLength >= 0 && n < p.minLength) || (p.maxLength >= 0 && n > p.maxLength) {
			return false
		}
	}
	return true
}
