package webagents

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Budgets of JSON Schema validation. A published schema is hostile input: a
// chain of $defs whose every level is {"anyOf":[{"$ref":prev},{"$ref":prev}]}
// is 3 KB of text and makes a validator do 2^depth work. Every schema from
// outside is therefore given a cost when it is compiled, and every
// validation a step budget before it starts.
const (
	// DefaultMaxSchemaCost is the default limit of a schema's cost: the
	// number of schema evaluations (every $ref, anyOf/oneOf/allOf branch,
	// not, if/then/else, properties, items… expanded, none shared; every
	// enum member counting as one more) one
	// validation makes at a single instance value, for instances nested
	// 32 deep (schemaCostDepth). A published inputSchema or outputSchema over it
	// makes the manifest invalid ("schema too complex").
	DefaultMaxSchemaCost = 2_000
	// schemaCostDepth is the instance nesting the static cost is computed
	// for; recursive schemas cost more the deeper the instance, so a
	// recursion that branches (2^depth) is refused while a linear one (a
	// tree) is not.
	schemaCostDepth = 32
	// maxValidationSteps bounds one validation: before it starts, the
	// schema's cost at the input's actual depth times the input's size
	// (its number of values, every string and object key counting one
	// more per 32 bytes) must not exceed it, or the input is refused with
	// invalid_input. Validation work is at most that product; a step of a
	// combinator-heavy schema costs about 1.5 µs and 300 bytes, so the
	// worst validation let through takes tens of milliseconds and under
	// 20 MB. Typical schemas cost 2 to 20, leaving room for inputs of
	// thousands of values.
	maxValidationSteps = 50_000
)

// schemaCost holds a compiled schema's evaluation graph and its cost per
// instance depth.
type schemaCost struct {
	weight  []int64   // a node's own work: 1, plus one per enum member
	inplace [][]int32 // children applied to the same instance value
	descend [][]int32 // children applied to a nested value
	order   []int32   // nodes so that in-place children come first

	root   []int64 // root[d]: the root's cost at depth d, saturated
	last   []int64 // every node's cost at depth len(root)-1
	stable bool    // costs no longer change with depth
}

// maxCostDepth is the deepest instance the cost is computed for: strictjson
// refuses deeper documents.
const maxCostDepth = strictjson.MaxDepth + 1

// costCap saturates cost arithmetic well above every limit.
const costCap = int64(1) << 40

// newSchemaCost builds the evaluation graph of a compiled schema. It fails
// for a cycle that does not descend into the instance (which the compiler
// also refuses).
func newSchemaCost(root *jsonschema.Schema) (*schemaCost, error) {
	ids := map[*jsonschema.Schema]int32{}
	var nodes []*jsonschema.Schema
	var dynamicTargets, recursiveTargets []*jsonschema.Schema
	var visit func(s *jsonschema.Schema)
	add := func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if _, ok := ids[s]; !ok {
			ids[s] = int32(len(nodes))
			nodes = append(nodes, s)
			visit(s)
		}
	}
	visit = func(s *jsonschema.Schema) {
		if s.DynamicAnchor != "" {
			dynamicTargets = append(dynamicTargets, s)
		}
		if s.RecursiveAnchor {
			recursiveTargets = append(recursiveTargets, s)
		}
		eachChild(s, func(c *jsonschema.Schema, _ bool) { add(c) })
	}
	add(root)
	sc := &schemaCost{weight: make([]int64, len(nodes)),
		inplace: make([][]int32, len(nodes)), descend: make([][]int32, len(nodes))}
	for i, s := range nodes {
		// Every enum member is a comparison, an exact rational one for
		// numbers: a large enum is as costly as as many subschemas.
		sc.weight[i] = 1 + int64(len(s.Enum))
		eachChild(s, func(c *jsonschema.Schema, descends bool) {
			if descends {
				sc.descend[i] = append(sc.descend[i], ids[c])
			} else {
				sc.inplace[i] = append(sc.inplace[i], ids[c])
			}
		})
		// A dynamic reference may resolve to any schema with an anchor of
		// its kind: count them all.
		if s.DynamicRef != nil {
			for _, t := range dynamicTargets {
				sc.inplace[i] = append(sc.inplace[i], ids[t])
			}
		}
		if s.RecursiveRef != nil {
			for _, t := range recursiveTargets {
				sc.inplace[i] = append(sc.inplace[i], ids[t])
			}
		}
	}
	// Post-order of the in-place edges; a back edge is a cycle.
	const (
		unseen = iota
		onStack
		done
	)
	state := make([]uint8, len(nodes))
	var cyclic bool
	var dfs func(n int32)
	dfs = func(n int32) {
		state[n] = onStack
		for _, c := range sc.inplace[n] {
			switch state[c] {
			case unseen:
				dfs(c)
			case onStack:
				cyclic = true
			}
		}
		state[n] = done
		sc.order = append(sc.order, n)
	}
	for n := range nodes {
		if state[n] == unseen {
			dfs(int32(n))
		}
	}
	if cyclic {
		return nil, errors.New("schema references itself without descending into the instance")
	}
	for len(sc.root) <= maxCostDepth && !sc.stable {
		sc.addLevel()
	}
	sc.last = nil
	return sc, nil
}

// eachChild calls fn with every subschema s applies, and whether it is
// applied to a nested value rather than to the same one.
func eachChild(s *jsonschema.Schema, fn func(c *jsonschema.Schema, descends bool)) {
	one := func(c *jsonschema.Schema, descends bool) {
		if c != nil {
			fn(c, descends)
		}
	}
	anySchema := func(v any, descends bool) {
		switch v := v.(type) {
		case *jsonschema.Schema:
			one(v, descends)
		case []*jsonschema.Schema:
			for _, c := range v {
				one(c, descends)
			}
		}
	}
	one(s.Ref, false)
	one(s.RecursiveRef, false)
	one(s.DynamicRef, false)
	one(s.Not, false)
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, c := range list {
			one(c, false)
		}
	}
	one(s.If, false)
	one(s.Then, false)
	one(s.Else, false)
	// Maps in key order: the graph, and so the work of building it, is the
	// same on every run.
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		one(s.DependentSchemas[k], false)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		anySchema(s.Dependencies[k], false)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		one(s.Properties[k], true)
	}
	patterns := slices.SortedFunc(maps.Keys(s.PatternProperties), func(a, b *regexp.Regexp) int {
		return strings.Compare(a.String(), b.String())
	})
	for _, re := range patterns {
		one(s.PatternProperties[re], true)
	}
	anySchema(s.AdditionalProperties, true)
	one(s.PropertyNames, true)
	one(s.UnevaluatedProperties, true)
	anySchema(s.Items, true)
	anySchema(s.AdditionalItems, true)
	for _, c := range s.PrefixItems {
		one(c, true)
	}
	one(s.Items2020, true)
	one(s.Contains, true)
	one(s.UnevaluatedItems, true)
	one(s.ContentSchema, true)
}

// at returns the root's cost for instances nested depth deep: the most
// schema evaluations one validation makes at any single value of such an
// instance. It is safe for concurrent use.
func (sc *schemaCost) at(depth int) int64 {
	if depth < len(sc.root) {
		return sc.root[depth]
	}
	if sc.stable {
		return sc.root[len(sc.root)-1]
	}
	return costCap // deeper than strictjson allows
}

func (sc *schemaCost) addLevel() {
	n := len(sc.inplace)
	cur := make([]int64, n)
	prev := sc.last
	for _, node := range sc.order {
		c := sc.weight[node]
		for _, child := range sc.inplace[node] {
			c += cur[child]
		}
		if prev != nil {
			for _, child := range sc.descend[node] {
				c += prev[child]
			}
		}
		cur[node] = min(c, costCap)
	}
	// Node 0 is the root. Past the step budget no input can pass, and
	// deeper is no cheaper: stop there.
	sc.stable = (prev != nil && slicesEqual(prev, cur)) || cur[0] > maxValidationSteps
	sc.root = append(sc.root, cur[0])
	sc.last = cur
}

func slicesEqual(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
