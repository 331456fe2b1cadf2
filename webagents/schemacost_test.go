package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// anyOfChain is the schema of the attack: a0 = {"type":"null"} and
// ak = {"anyOf":[{"$ref":"#/$defs/a(k-1)"},{"$ref":"#/$defs/a(k-1)"}]}, the
// root referencing a(depth). Validation without a budget does 2^depth work.
func anyOfChain(depth int) string {
	var defs []string
	defs = append(defs, `"a0":{"type":"null"}`)
	for k := 1; k <= depth; k++ {
		prev := fmt.Sprintf(`{"$ref":"#/$defs/a%d"}`, k-1)
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[%s,%s]}`, k, prev, prev))
	}
	return fmt.Sprintf(`{"$defs":{%s},"$ref":"#/$defs/a%d"}`, strings.Join(defs, ","), depth)
}

// chainManifest publishes the chain as the input schema of action "x".
func chainManifest(depth int) string {
	return doc(okWorkflow, `{"x":{"effect":"read","inputSchema":`+anyOfChain(depth)+`}}`)
}

func TestSchemaTooComplexIsRefused(t *testing.T) {
	for _, depth := range []int{10, 16, 20, 24, 40, 60} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			_, err := ParseManifest([]byte(chainManifest(depth)), nil)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, "$.actions.x.inputSchema", ve.Problems[0].Path)
			assert.Contains(t, ve.Problems[0].Message, "schema too complex")
		})
	}
	// The output schema is bounded the same way.
	out := doc(okWorkflow, `{"x":{"outputSchema":`+anyOfChain(30)+`}}`)
	_, err := ParseManifest([]byte(out), nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "$.actions.x.outputSchema", ve.Problems[0].Path)
}

// TestSchemaCostOfTheChain checks the cost model against the chain: each
// level doubles the work, so the measured cost must too.
func TestSchemaCostOfTheChain(t *testing.T) {
	costs := map[int]int64{}
	for _, depth := range []int{4, 5, 6} {
		cs, err := compileUserSchema([]byte(anyOfChain(depth)), 1<<40)
		require.NoError(t, err)
		costs[depth] = cs.cost.at(schemaCostDepth)
	}
	// a0 costs 1; ak = 1 (anyOf) + 2 × (1 ($ref) + a(k-1)); the root adds its own $ref.
	want := func(k int) int64 {
		c := int64(1)
		for range k {
			c = 1 + 2*(1+c)
		}
		return 1 + c
	}
	for d, c := range costs {
		assert.Equal(t, want(d), c, "depth %d", d)
	}
}

func TestSchemaCostLimitIsConfigurable(t *testing.T) {
	m := []byte(chainManifest(8)) // cost 1022
	_, err := ParseManifest(m, nil)
	require.NoError(t, err)
	_, err = ParseManifest(m, &ParseOptions{MaxSchemaCost: 1000})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Problems[0].Message, "schema too complex: its validation cost is 1022; the limit is 1000")
}

func TestRecursiveSchemas(t *testing.T) {
	// A tree: each level of the instance costs a few evaluations. Allowed.
	tree := `{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`
	_, err := ParseManifest([]byte(doc(okWorkflow, `{"x":{"inputSchema":`+tree+`}}`)), nil)
	require.NoError(t, err)
	// A recursion that branches at every level is exponential in the
	// instance's depth. Refused.
	branching := `{"anyOf":[{"items":{"$ref":"#"}},{"items":{"$ref":"#"}}]}`
	_, err = ParseManifest([]byte(doc(okWorkflow, `{"x":{"inputSchema":`+branching+`}}`)), nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Problems[0].Message, "schema too complex")
}

// TestValidationStepBudget: a schema under the cost limit still cannot be
// made to validate an input whose size times the cost exceeds the budget.
func TestValidationStepBudget(t *testing.T) {
	tree := `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`
	cs, err := compileUserSchema([]byte(tree), DefaultMaxSchemaCost)
	require.NoError(t, err)
	assert.Empty(t, validateInput(cs, json.RawMessage(`{"children":[{"children":[]}]}`)))
	// An ordinary input of hundreds of values is well within the budget.
	wideTree := `{"children":[` + strings.Repeat(`{"children":[]},`, 499) + `{"children":[]}]}`
	assert.Empty(t, validateInput(cs, json.RawMessage(wideTree)))

	// 900 levels deep: the cost grows with the depth, and so does the
	// number of values.
	deep := strings.Repeat(`{"children":[`, 900) + strings.Repeat(`]}`, 900)
	problems := validateInput(cs, json.RawMessage(deep))
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Message, "validation budget")

	// A wide input against a costly (but allowed) schema.
	costly, err := compileUserSchema([]byte(anyOfChain(8)), DefaultMaxSchemaCost)
	require.NoError(t, err)
	wide := `{"items":[` + strings.Repeat(`null,`, 5000) + `null]}`
	itemsOf := strings.TrimSuffix(anyOfChain(8), `,"$ref":"#/$defs/a8"}`) +
		`,"properties":{"items":{"items":{"$ref":"#/$defs/a8"}}}}`
	costlyItems, err := compileUserSchema([]byte(itemsOf), DefaultMaxSchemaCost)
	require.NoError(t, err)
	assert.Empty(t, validateInput(costly, json.RawMessage(`null`)))
	problems = validateInput(costlyItems, json.RawMessage(wide))
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Message, "validation budget")
}

// TestSchemaCostOnEveryPath: the client (Discover), the checker and the
// server adapter all refuse the chain.
func TestSchemaCostOnEveryPath(t *testing.T) {
	manifest := chainManifest(40)
	srv := mirrorSite(t, manifest)
	var c Client
	d, err := c.Discover(t.Context(), srv.URL+"/")
	d = outcome(t, d, err)
	assert.Equal(t, DiscoveryInvalid, d.Status)
	assert.ErrorContains(t, d.Err, "schema too complex")

	rep, err := c.Check(t.Context(), srv.URL+"/")
	require.NoError(t, err)
	assert.False(t, rep.Valid)
	require.NotEmpty(t, rep.Problems)
	assert.Contains(t, rep.Problems[0].Message, "schema too complex")

	m, err := ParseManifest([]byte(doc(okWorkflow, `{"x":{}}`)), nil)
	require.NoError(t, err)
	m.Actions["x"].InputSchema = json.RawMessage(anyOfChain(40))
	_, err = NewHandler(m, map[string]ActionHandler{"x": ActionFunc(nil)}, &HandlerOptions{Origin: testOrigin})
	require.Error(t, err)
	assert.ErrorContains(t, err, "schema too complex")
}

// TestChainValidatesCheaply: at every depth the chain is refused or, when
// allowed, an input validates within a small, measured allocation budget.
func TestChainValidatesCheaply(t *testing.T) {
	for depth := 10; depth <= 60; depth += 2 {
		m, err := ParseManifest([]byte(chainManifest(depth)), nil)
		if err != nil {
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "depth %d: %v", depth, err)
			assert.Contains(t, ve.Problems[0].Message, "schema too complex")
			continue
		}
		a := m.Actions["x"]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = NewPlan(m, "/", &Batch{Version: Version, Operations: []Operation{{ID: "o", Action: "x", Input: json.RawMessage(`{}`)}}})
		runtime.ReadMemStats(&after)
		// {} is not null: an invalid_input error, found by full evaluation.
		require.Error(t, err)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(20<<20), "depth %d", depth)
		assert.NotNil(t, a.input)
	}
}

func BenchmarkSchemaChain(b *testing.B) {
	for _, depth := range []int{10, 20, 40, 60} {
		b.Run(fmt.Sprint("depth", depth), func(b *testing.B) {
			raw := []byte(chainManifest(depth))
			b.ReportAllocs()
			for b.Loop() {
				m, err := ParseManifest(raw, nil)
				if err == nil {
					_, _ = NewPlan(m, "/", &Batch{Version: Version, Operations: []Operation{{ID: "o", Action: "x", Input: json.RawMessage(`{}`)}}})
				}
			}
		})
	}
}

// TestValidationTimeout: a validation the static budget lets through but
// that outlives its time budget (shortened here) is refused at once, and
// its abandoned goroutine gives its turn back when it ends.
func TestValidationTimeout(t *testing.T) {
	costly := strings.TrimSuffix(anyOfChain(8), `,"$ref":"#/$defs/a8"}`) + `,"items":{"$ref":"#/$defs/a8"}}`
	cs, err := compileUserSchema([]byte(costly), DefaultMaxSchemaCost)
	require.NoError(t, err)
	n := int(maxValidationSteps/cs.cost.at(1)) - 2
	input := json.RawMessage("[" + strings.Repeat("null,", n-1) + "null]")
	require.Empty(t, validateInput(cs, input), "within the real budget it validates")

	validationTimeout = time.Microsecond
	defer func() { validationTimeout = defaultValidationTimeout }()
	problems := validateInput(cs, input)
	require.Len(t, problems, 1)
	assert.Equal(t, "$", problems[0].Path)
	assert.Contains(t, problems[0].Message, "validation took longer than its budget")

	// Small validations (here: the schema's cost at one value) stay on the
	// caller's goroutine, untimed.
	small := json.RawMessage(`null`)
	assert.Empty(t, validateInput(cs, small))

	// Wait for the abandoned validation to give its turn back (goleak).
	for i := 0; i < maxHeavyValidations; i++ {
		heavyValidations <- struct{}{}
	}
	for i := 0; i < maxHeavyValidations; i++ {
		<-heavyValidations
	}
}

// BenchmarkValidationAtTheBudget validates the most work the budget lets
// through: a schema near the cost limit applied to each item of an array
// sized so that cost × values is just under maxValidationSteps. The floor
// validates the same input against {"items":{"type":"null"}}.
func BenchmarkValidationAtTheBudget(b *testing.B) {
	costly := strings.TrimSuffix(anyOfChain(8), `,"$ref":"#/$defs/a8"}`) + `,"items":{"$ref":"#/$defs/a8"}}`
	for _, bench := range []struct{ name, schema string }{
		{"floor", `{"items":{"type":"null"}}`},
		{"near-limit", costly},
	} {
		b.Run(bench.name, func(b *testing.B) {
			worst, err := compileUserSchema([]byte(costly), DefaultMaxSchemaCost)
			require.NoError(b, err)
			n := int(maxValidationSteps/worst.cost.at(1)) - 2
			input := json.RawMessage("[" + strings.Repeat("null,", n-1) + "null]")
			cs, err := compileUserSchema([]byte(bench.schema), DefaultMaxSchemaCost)
			require.NoError(b, err)
			require.Empty(b, validateInput(cs, input), "cost %d, %d values", cs.cost.at(1), n)
			b.ReportAllocs()
			for b.Loop() {
				validateInput(cs, input)
			}
		})
	}
}

// TestNewHandlerKeepsTheSchemaCostLimit: NewHandler validates the manifest
// again with the limit it was parsed with, so a site that raised
// ParseOptions.MaxSchemaCost can serve the manifest it parsed.
func TestNewHandlerKeepsTheSchemaCostLimit(t *testing.T) {
	raw := []byte(chainManifest(9)) // cost 2046, over the default 2,000
	_, err := ParseManifest(raw, nil)
	require.ErrorContains(t, err, "schema too complex")
	m, err := ParseManifest(raw, &ParseOptions{MaxSchemaCost: 4000})
	require.NoError(t, err)
	noop := ActionFunc(func(context.Context, *ActionRequest) (any, error) { return nil, nil })
	_, err = NewHandler(m, map[string]ActionHandler{"x": noop}, &HandlerOptions{Origin: testOrigin})
	assert.NoError(t, err)
}
