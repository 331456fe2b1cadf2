package webagents

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// Reference is a parsed "$ref" value: an operation id and a path into its
// result. Path segments are object keys, or decimal indexes into arrays.
type Reference struct {
	Operation string
	Path      []string
}

// ParseReference parses "opId" or "opId.seg.seg…". It returns false for an
// invalid operation id or an empty segment.
func ParseReference(s string) (Reference, bool) {
	id, rest, dotted, ok := splitReference(s)
	if !ok {
		return Reference{}, false
	}
	r := Reference{Operation: id}
	if dotted {
		r.Path = strings.Split(rest, ".")
	}
	return r, true
}

// splitReference checks a reference as ParseReference does and splits it
// at its first dot, without allocating.
func splitReference(s string) (id, rest string, dotted, ok bool) {
	id, rest, dotted = strings.Cut(s, ".")
	if !validOpID(id) || (dotted && (rest == "" || rest[0] == '.' || rest[len(rest)-1] == '.' || strings.Contains(rest, ".."))) {
		return "", "", false, false
	}
	return id, rest, dotted, true
}

// String returns the reference in its wire form.
func (r Reference) String() string {
	if len(r.Path) == 0 {
		return r.Operation
	}
	return r.Operation + "." + strings.Join(r.Path, ".")
}

// Resolve walks a decoded JSON value (as produced by encoding/json with
// UseNumber or without) along the reference's path. It returns false for a
// missing key, an index out of range, or a path into a non-container.
func (r Reference) Resolve(v any) (any, bool) {
	for _, seg := range r.Path {
		var ok bool
		if v, ok = step(v, seg); !ok {
			return nil, false
		}
	}
	return v, true
}

// arrayIndex parses a canonical decimal index ("0", "17"; not "01" or "+1").
func arrayIndex(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 || (len(seg) > 1 && seg[0] == '0') || !isDigits(seg) {
		return 0, false
	}
	n, err := strconv.Atoi(seg)
	return n, err == nil
}

// refOperations calls fn with the operation of each reference in a
// decoded input, and returns the number of references and whether every
// one is well-formed.
func refOperations(tree any, fn func(op string)) (n int, ok bool) {
	ok = true
	walkRefs(tree, func(v any) {
		n++
		s, isString := v.(string)
		id, _, _, valid := splitReference(s)
		if !isString || !valid {
			ok = false
			return
		}
		if fn != nil {
			fn(id)
		}
	})
	return n, ok
}

// substituteRefs returns tree with every reference replaced by the value it
// resolves to; lookup returns the decoded result of an operation. The
// second result is the first reference that did not resolve. The bytes the
// references add are taken from r.budget; once it is below zero
// substitution stops and returns nil, nil.
func substituteRefs(tree any, src refSource, r *substitution) (any, *Reference) {
	switch t := tree.(type) {
	case map[string]any:
		if ref, ok := t["$ref"]; ok && len(t) == 1 {
			s, _ := ref.(string)
			v, found := resolveReference(s, src)
			if !found {
				bad, _ := ParseReference(s) // the zero Reference when s is malformed
				return nil, &bad
			}
			// Count what the reference adds, and stop once the input is
			// over the limit: thousands of references to one large result
			// would otherwise build gigabytes before the size check.
			if r.budget >= 0 {
				n, err := r.encodedLen(v)
				if err != nil {
					bad, _ := ParseReference(s)
					return nil, &bad
				}
				r.budget -= n
			}
			if r.budget < 0 {
				return nil, nil
			}
			return v, nil
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			v, bad := substituteRefs(e, src, r)
			if bad != nil || r.budget < 0 {
				return nil, bad
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			v, bad := substituteRefs(e, src, r)
			if bad != nil || r.budget < 0 {
				return nil, bad
			}
			out[i] = v
		}
		return out, nil
	default:
		return tree, nil
	}
}

// substitution is the state of one substituteRefs: the bytes references
// may still add, and a buffer to measure them in.
type substitution struct {
	budget  int
	scratch []byte
}

// encodedLen returns the length of encodeTree(v).
func (r *substitution) encodedLen(v any) (int, error) {
	var ok bool
	if r.scratch, ok = appendTree(r.scratch[:0], v); ok {
		return len(r.scratch), nil
	}
	enc, err := marshalCompact(v)
	return len(enc), err
}

// refSource returns the value a well-formed reference names: the result of
// operation id at the dotted path rest (the whole result when dotted is
// false), as Reference.Resolve finds it in the decoded result.
type refSource func(id, rest string, dotted bool) (any, bool)

// treeSource is the refSource of decoded results; lookup returns the
// decoded result of an operation.
func treeSource(lookup func(id string) any) refSource {
	return func(id, rest string, dotted bool) (any, bool) { return walkPath(lookup(id), rest, dotted) }
}

// resolveReference is ParseReference(s) and Resolve of the operation's
// result, without allocating: it reports false for a malformed reference
// as for one that does not resolve.
func resolveReference(s string, src refSource) (any, bool) {
	id, rest, dotted, ok := splitReference(s)
	if !ok {
		return nil, false
	}
	return src(id, rest, dotted)
}

// walkPath is Reference.Resolve with the path given as its dotted text
// (rest, when dotted).
func walkPath(v any, rest string, dotted bool) (any, bool) {
	for dotted {
		var seg string
		seg, rest, dotted = strings.Cut(rest, ".")
		var ok bool
		if v, ok = step(v, seg); !ok {
			return nil, false
		}
	}
	return v, true
}

// step returns the member or element seg of a decoded JSON value.
func step(v any, seg string) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		e, ok := t[seg]
		return e, ok
	case []any:
		i, ok := arrayIndex(seg)
		if !ok || i >= len(t) {
			return nil, false
		}
		return t[i], true
	}
	return nil, false
}

// errResolvedTooLarge is returned by resolveInput for an input whose
// references make it larger than maxResolvedBytes.
var errResolvedTooLarge = errors.New("resolved input too large")

// maxResolvedBytes bounds the bytes references may add to an input while
// it is resolved: MaxInputChars characters are at most four bytes each, so
// no input within the limit is cut short, and the exact check in
// characters follows.
const maxResolvedBytes = 4 * MaxInputChars

// resolveInput substitutes the references of a raw input and re-encodes it.
// It returns errResolvedTooLarge as soon as the references have added more
// than maxResolvedBytes.
//
// tree is input already decoded (nil: decode it); it is only read.
func resolveInput(input json.RawMessage, tree any, lookup func(id string) any) (json.RawMessage, *Reference, error) {
	return resolveFrom(input, tree, treeSource(lookup))
}

// resolveFrom is resolveInput with the results read from src.
func resolveFrom(input json.RawMessage, tree any, src refSource) (json.RawMessage, *Reference, error) {
	if tree == nil {
		r := substitution{budget: maxResolvedBytes}
		if out, bad, ok := r.appendResolvedRaw(nil, input, src); ok {
			return r.result(out, bad)
		}
		var err error
		if tree, err = decodeTree(input); err != nil {
			return nil, nil, err
		}
	}
	// The resolved input is written as it is substituted; only for a value
	// appendTree does not write does it take substituteRefs and
	// marshalCompact (FuzzAppendResolved checks the two agree).
	r := substitution{budget: maxResolvedBytes}
	if out, bad, ok := r.appendResolved(nil, tree, src); ok {
		return r.result(out, bad)
	}
	r = substitution{budget: maxResolvedBytes}
	resolved, bad := substituteRefs(tree, src, &r)
	if bad != nil {
		return nil, bad, nil
	}
	if r.budget < 0 {
		return nil, nil, errResolvedTooLarge
	}
	out, err := encodeTree(resolved)
	return out, nil, err
}

// result is what resolveInput returns for an input written as out, with
// bad the reference that did not resolve.
func (r *substitution) result(out []byte, bad *Reference) (json.RawMessage, *Reference, error) {
	switch {
	case bad != nil:
		return nil, bad, nil
	case r.budget < 0:
		return nil, nil, errResolvedTooLarge
	}
	return out, nil, nil
}

// appendResolved appends encodeTree(substituteRefs(tree)): the input with
// its references replaced, keys sorted. It stops at the first reference
// that does not resolve (bad) or once r.budget is below zero; ok is false
// for a value appendTree does not write.
func (r *substitution) appendResolved(dst []byte, tree any, src refSource) (out []byte, bad *Reference, ok bool) {
	switch t := tree.(type) {
	case map[string]any:
		if t == nil {
			return append(dst, "null"...), nil, true
		}
		if ref, isRef := t["$ref"]; isRef && len(t) == 1 {
			s, _ := ref.(string)
			v, found := resolveReference(s, src)
			if !found {
				bad, _ := ParseReference(s) // the zero Reference when s is malformed
				return dst, &bad, true
			}
			at := len(dst)
			if dst, ok = appendTree(dst, v); !ok {
				return dst, nil, false
			}
			r.budget -= len(dst) - at
			return dst, nil, true
		}
		var small [8]string
		dst = append(dst, '{')
		for i, k := range sortedKeys(t, small[:0]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTreeString(dst, k)
			dst = append(dst, ':')
			if dst, bad, ok = r.appendResolved(dst, t[k], src); bad != nil || !ok || r.budget < 0 {
				return dst, bad, ok
			}
		}
		return append(dst, '}'), nil, true
	case []any:
		if t == nil {
			return append(dst, "null"...), nil, true
		}
		dst = append(dst, '[')
		for i, e := range t {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, bad, ok = r.appendResolved(dst, e, src); bad != nil || !ok || r.budget < 0 {
				return dst, bad, ok
			}
		}
		return append(dst, ']'), nil, true
	}
	out, ok = appendTree(dst, tree)
	return out, nil, ok
}
