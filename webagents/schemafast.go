package webagents

import (
	"encoding/json"
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
