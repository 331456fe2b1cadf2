package webagents

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simpleSchemaSeeds are schemas the fast path takes (and a few it must
// not), with inputs valid and invalid for them.
var simpleSchemaSeeds = []struct {
	schema string
	simple bool
	inputs []string
}{
	{`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`, true,
		[]string{`{"query":"keyboard"}`, `{}`, `{"query":1}`, `{"query":"x","extra":[1,{"a":null}]}`, `{"query":null}`}},
	{`{"type":"object","description":"d","properties":{"n":{"type":"integer","title":"t"},"f":{"type":["number","null"]},"b":{"type":"boolean"},"o":{"type":"object"},"a":{"type":"array"},"any":true},"additionalProperties":false}`, true,
		[]string{`{"n":3,"f":null,"b":true,"o":{},"a":[],"any":{"x":1}}`, `{"n":1.0}`, `{"n":1e3}`, `{"n":-0}`, `{"n":1.5}`, `{"x":1}`, `{"f":"1"}`, `{"b":0}`}},
	{`{"type":"object","properties":{"size":{"type":"string","enum":["s","m","l"]},"name":{"type":"string","minLength":2,"maxLength":3}},"required":["size","name"]}`, true,
		[]string{`{"size":"m","name":"ab"}`, `{"size":"xl","name":"ab"}`, `{"size":"m","name":"a"}`, `{"size":"m","name":"ééé"}`, `{"size":"m","name":"abcd"}`, `{"size":1,"name":"ab"}`}},
	{`{"properties":{"q":{"enum":["a"]}}}`, true, []string{`{"q":"a"}`, `{"q":"b"}`, `{}`}},
	{`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"number"}},"required":["q"]}`, true,
		[]string{` { "q" : "a" , "n" : -1.5e3 } `, `{"q":"a","q":"b"}`, `{"q":"a\u0062"}`, `{"q":"a","n":1e1001}`, `{"q":"a","n":1e1000}`,
			`{"q":"a"}x`, `{"q":"a",}`, `{"q":"ÿ"}`, `{"q":"é"}`, `{"\u0071":"a"}`, `{"q":"a","x":tru}`, `{"q":"a","n":01}`,
			`{"q":"` + strings.Repeat("x", 5000) + `"}`}},
	{`{"type":"object","properties":{"q":{"type":"string","pattern":"^a"}}}`, false, []string{`{"q":"a"}`, `{"q":"b"}`}},
	{`{"type":"object","properties":{"q":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, false, []string{`{"q":"a"}`}},
	{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, false, []string{`{}`}},
	{`{"type":["object","null"]}`, false, []string{`{}`}},
	{`{"type":"object","properties":{"q":false}}`, false, []string{`{"q":1}`, `{}`}},
	{`{"type":"object","properties":{"q":{"type":"string","maxLength":2.0}}}`, false, []string{`{"q":"abc"}`}},
}

func TestSimpleSchemaCompiles(t *testing.T) {
	for _, c := range simpleSchemaSeeds {
		cs, err := compileUserSchema([]byte(c.schema), DefaultMaxSchemaCost)
		require.NoError(t, err, c.schema)
		assert.Equal(t, c.simple, cs.simple != nil, c.schema)
	}
}

// TestSimpleSchemaTakesTypicalInputs checks that the fast path decides the
// valid inputs of typical schemas (else it would only cost time).
func TestSimpleSchemaTakesTypicalInputs(t *testing.T) {
	for _, c := range []struct{ schema, input string }{
		{simpleSchemaSeeds[0].schema, `{"query":"keyboard"}`},
		{simpleSchemaSeeds[1].schema, `{"n":3,"f":null,"b":true,"o":{},"a":[],"any":{"x":1}}`},
		{simpleSchemaSeeds[2].schema, `{"size":"m","name":"ééé"}`},
	} {
		cs, err := compileUserSchema([]byte(c.schema), DefaultMaxSchemaCost)
		require.NoError(t, err)
		tree, err := decodeTree([]byte(c.input))
		require.NoError(t, err)
		assert.True(t, cs.simple.valid(tree), "%s on %s", c.input, c.schema)
		if !strings.ContainsAny(c.input, "[{") || c.input[0] == '{' && !strings.ContainsAny(c.input[1:], "[{") {
			assert.True(t, cs.simple.validRaw([]byte(c.input), cs.cost), "raw %s on %s", c.input, c.schema)
		}
	}
}

// FuzzSimpleSchema checks the fast path against the validator: it never
// calls valid an input the validator refuses, and validateInput's problems
// are those it finds without the fast path.
func FuzzSimpleSchema(f *testing.F) {
	for _, c := range simpleSchemaSeeds {
		for _, in := range c.inputs {
			f.Add(c.schema, in)
		}
	}
	f.Fuzz(func(t *testing.T, schema, input string) {
		cs, err := compileUserSchema([]byte(schema), DefaultMaxSchemaCost)
		if err != nil || cs.simple == nil {
			return
		}
		tree, err := decodeTree([]byte(input))
		if err != nil {
			return
		}
		if cs.simple.valid(tree) {
			if err := validateRecovered(cs, tree); err != nil {
				t.Fatalf("the fast path takes %s for %s; the validator says %v", input, schema, err)
			}
		}
		slow := *cs
		slow.simple = nil
		want := validateInput(&slow, []byte(input))
		if cs.simple.validRaw([]byte(input), cs.cost) && len(want) > 0 {
			t.Fatalf("validRaw takes %s for %s; without the fast path: %v", input, schema, want)
		}
		assert.Equal(t, want, validateInput(cs, []byte(input)))
	})
}

// FuzzAppendResolved checks that resolveInput writes what substituteRefs
// and encodeTree make.
func FuzzAppendResolved(f *testing.F) {
	f.Add([]byte(`{"productId":{"$ref":"find.results.0.id"},"n":1.50,"s":"é\u0000"}`), []byte(`{"results":[{"id":"kb-1","id":"x"}],"n":1e3}`))
	f.Add([]byte(`{"a":[{"$ref":"find"},{"$ref":"find.n"}],"b":{"c":{"$ref":"find.s"}}}`), []byte(`{"n":-0.0E+1,"s":"\ud800<>&"}`))
	f.Add([]byte(`{"a":{"$ref":"find.missing"}}`), []byte(`{}`))
	f.Add([]byte(`{"$ref":"find"}`), []byte(`[1,"x"]`))
	f.Fuzz(func(t *testing.T, input, result []byte) {
		tree, err := decodeTree(input)
		if err != nil {
			return
		}
		res, _ := decodeTree(result)
		src := treeSource(func(string) any { return res })
		got, gotBad, gotErr := resolveInput(input, tree, func(string) any { return res })
		r := substitution{budget: maxResolvedBytes}
		resolved, wantBad := substituteRefs(tree, src, &r)
		switch {
		case wantBad != nil:
			require.NotNil(t, gotBad)
			if n, _ := refOperations(tree, nil); n == 1 {
				assert.Equal(t, wantBad.String(), gotBad.String())
			}
		case r.budget < 0:
			assert.ErrorIs(t, gotErr, errResolvedTooLarge)
		default:
			want, err := encodeTree(resolved)
			require.NoError(t, err)
			require.Nil(t, gotBad)
			require.NoError(t, gotErr)
			assert.Equal(t, string(want), string(got))
		}
	})
}
