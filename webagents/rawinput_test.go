package webagents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var rawInputSeeds = [][]byte{
	[]byte(`{"productId":{"$ref":"find.results.0.id"}}`),
	[]byte(` { "a" : [ {"$ref":"x"} , {"$ref":"y.z"}, 1, -2.5e3, true, null, "s\u00e9\"" ], "b":{"c":{"$ref":1}} } `),
	[]byte(`{"a":{"$ref":"x","b":1},"\u0024ref":{"$ref":"x.."},"é":{"$ref":"x.0"}}`),
	[]byte(`{"a":{"$ref":"x"},"a":2}`),
	[]byte(`{"$ref":"x"}`),
	[]byte(`{"a":{"\u0024ref":"x"},"b":"<>&\u2028","c":"\xff"}`),
	[]byte(`{"a":[[[[{"$ref":"x.k"}]]]],"b":{}}`),
	[]byte(`{"a":1}x`),
	[]byte(`{"a":01}`),
}

// FuzzRawRefs checks the text walkers that find references against the
// tree's: the same references, and the same verdict on their values.
func FuzzRawRefs(f *testing.F) {
	for _, s := range rawInputSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		n, ok, strs, raw := rawRefOperations(input, nil)
		if !raw {
			return
		}
		tree, err := decodeTree(input)
		require.NoError(t, err, "rawRefs read text decodeTree refuses")
		var ids []string
		wantN, wantOK := refOperations(tree, func(op string) { ids = append(ids, op) })
		assert.Equal(t, wantN, n)
		assert.Equal(t, wantOK, ok)
		// The same operations: a batch of them (and of the one referring)
		// gets the same dependencies from both walkers.
		b := &Batch{Operations: []Operation{{ID: "self"}}}
		for _, id := range ids {
			if b.index(id) < 0 && len(b.Operations) < 64 {
				b.Operations = append(b.Operations, Operation{ID: id})
			}
		}
		got, want := refTargets{b: b, id: "self"}, refTargets{b: b, id: "self"}
		rawRefOperations(input, &got)
		refOperations(tree, want.add)
		assert.Equal(t, want.deps, got.deps)
		assert.Equal(t, want.err == nil, got.err == nil)
		wantStrs := true
		walkRefs(tree, func(v any) {
			if _, ok := v.(string); !ok {
				wantStrs = false
			}
		})
		assert.Equal(t, wantStrs, strs)
	})
}

// FuzzAppendResolvedRaw checks that an input resolved from its text is
// the input resolved from its tree.
func FuzzAppendResolvedRaw(f *testing.F) {
	for _, s := range rawInputSeeds {
		f.Add(s, []byte(`{"results":[{"id":"kb-1"}],"z":[1,{"k":"v"}],"0":"zero","k":"\u2028"}`))
	}
	f.Fuzz(func(t *testing.T, input, result []byte) {
		res, _ := decodeTree(result)
		src := treeSource(func(string) any { return res })
		r := substitution{budget: maxResolvedBytes}
		got, gotBad, ok := r.appendResolvedRaw(nil, input, src)
		if !ok {
			return
		}
		tree, err := decodeTree(input)
		require.NoError(t, err, "the raw walk read text decodeTree refuses")
		want, wantBad, wantErr := resolveFrom(input, tree, src)
		gotOut, gotBad, gotErr := r.result(got, gotBad)
		switch {
		case wantBad != nil:
			require.NotNil(t, gotBad)
			if n, _ := refOperations(tree, nil); n == 1 {
				assert.Equal(t, wantBad.String(), gotBad.String())
			}
		case wantErr != nil:
			assert.Equal(t, wantErr, gotErr)
		default:
			require.Nil(t, gotBad)
			require.NoError(t, gotErr)
			assert.Equal(t, string(want), string(gotOut))
		}
	})
}

// TestRawWalkersTakeTypicalInputs: inputs of the usual shapes are read
// from their text (else the walkers only cost time).
func TestRawWalkersTakeTypicalInputs(t *testing.T) {
	for _, in := range []string{
		`{"productId":{"$ref":"find.results.0.id"}}`,
		`{"items":[{"id":{"$ref":"a.id"},"qty":2}],"note":"gift – wrap"}`,
	} {
		_, _, _, raw := rawRefOperations([]byte(in), nil)
		assert.True(t, raw, in)
		r := substitution{budget: maxResolvedBytes}
		_, _, ok := r.appendResolvedRaw(nil, []byte(in), treeSource(func(string) any { return map[string]any{"id": "x"} }))
		assert.True(t, ok, in)
	}
	_, _, _, raw := rawRefOperations([]byte(`{"a":1,"a":2}`), nil)
	assert.False(t, raw, "duplicate keys go to decodeTree")
	_, _, _, raw = rawRefOperations([]byte(strings.Repeat("[", 300)+strings.Repeat("]", 300)), nil)
	assert.False(t, raw, "so does deep nesting")
}

// FuzzValidJSON checks validJSON against json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range rawInputSeeds {
		f.Add(s)
	}
	f.Add([]byte(`"\ud800"`))
	f.Add([]byte(` [1, 2.5e-3, "\u00e9\n", {"a": null}] `))
	f.Add([]byte(`{"a":"\x"}`))
	f.Add([]byte(strings.Repeat("[", 250) + strings.Repeat("]", 250)))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", data, got, want)
		}
	})
}

// TestRawWalkersBounded: the text walkers read each byte a bounded number
// of times. Objects are scanned once per enclosing level, so inputs
// nested deeper than maxRawDepth, and paths longer than it, are decoded;
// and a run reads at most maxRawPathReads paths from one result's text.
func TestRawWalkersBounded(t *testing.T) {
	nest := func(levels int) string {
		return strings.Repeat(`{"a":`, levels) + `{"$ref":"x"}` + strings.Repeat("}", levels)
	}
	_, _, _, raw := rawRefOperations([]byte(nest(maxRawDepth-1)), nil)
	assert.True(t, raw)
	_, _, _, raw = rawRefOperations([]byte(nest(maxRawDepth)), nil)
	assert.False(t, raw)
	r := substitution{budget: maxResolvedBytes}
	_, _, ok := r.appendResolvedRaw(nil, []byte(nest(maxRawDepth)), treeSource(func(string) any { return nil }))
	assert.False(t, ok)

	_, _, ok = rawPath([]byte(`{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}`), "a.a.a.a.a.a.a")
	assert.False(t, ok)
	v, found, ok := rawPath([]byte(`{"a":{"a":{"a":1}}}`), "a.a.a")
	assert.True(t, ok && found)
	assert.Equal(t, json.Number("1"), v)

	trees := make(resultTrees, 1)
	for range maxRawPathReads {
		assert.True(t, trees.rawRead(0))
	}
	assert.False(t, trees.rawRead(0))
}
