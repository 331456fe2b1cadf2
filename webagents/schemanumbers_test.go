package webagents

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inputManifest publishes schema as the input schema of read action "x".
func inputManifest(schema string) string {
	return doc(okWorkflow, `{"x":{"effect":"read","inputSchema":`+schema+`}}`)
}

// planInput plans one operation of action "x" with the given input and
// returns its error; it fails the test when planning panics.
func planInput(t *testing.T, m *Manifest, input string) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("planning panicked: %v", r)
		}
	}()
	_, err = NewPlan(m, "/", &Batch{Version: Version, Operations: []Operation{{ID: "o", Action: "x", Input: json.RawMessage(input)}}})
	return err
}

// allocsOf returns the bytes fn allocates.
func allocsOf(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeExponentsAreRefused: the schema validator reads numbers as exact
// rationals, so 1e9999999 (which math/big cannot read) made it dereference
// nil and 1e999999 cost it tens of milliseconds and megabytes each. Such
// numbers are refused with a problem at their path, in a manifest, in a
// published schema and in an input, and nothing panics.
func TestHugeExponentsAreRefused(t *testing.T) {
	// In the manifest's own fields.
	bad := doc(`{"endpoint":"/api/agent/workflow","maxOperations":1e9999999}`, `{"x":{}}`)
	var ve *ValidationError
	require.NotPanics(t, func() { _, err := ParseManifest([]byte(bad), nil); require.ErrorAs(t, err, &ve) })
	assert.Equal(t, "$.workflow.maxOperations", ve.Problems[0].Path)
	assert.Contains(t, ve.Problems[0].Message, "number out of range")

	// In a published schema.
	for _, schema := range []string{
		`{"properties":{"q":{"enum":[1e9999999]}}}`,
		`{"properties":{"q":{"const":1E+99999999}}}`,
		`{"properties":{"q":{"minimum":-1e-9999999}}}`,
	} {
		require.NotPanics(t, func() { _, err := ParseManifest([]byte(inputManifest(schema)), nil); require.ErrorAs(t, err, &ve) }, schema)
		assert.Contains(t, ve.Problems[0].Message, "number out of range", schema)
	}

	// In an input, against every keyword that reads numbers exactly.
	for _, schema := range []string{
		`{"properties":{"q":{"type":"integer"}}}`,
		`{"properties":{"q":{"minimum":1}}}`,
		`{"properties":{"q":{"multipleOf":3}}}`,
		`{"properties":{"q":{"enum":[1,2]}}}`,
		`{"properties":{"q":{"type":"array","uniqueItems":true}}}`,
	} {
		m, err := ParseManifest([]byte(inputManifest(schema)), nil)
		require.NoError(t, err, schema)
		for _, input := range []string{`{"q":1e9999999}`, `{"q":[1,1e-99999999]}`, `{"q":[1, 2E+1001]}`} {
			var e *Error
			require.ErrorAs(t, planInput(t, m, input), &e, "%s with %s", schema, input)
			assert.Equal(t, CodeInvalidInput, e.Code)
			assert.Contains(t, e.Message, "number out of range", "%s with %s", schema, input)
		}
	}

	// Two hundred numbers with large but readable exponents: refused
	// before the validator reads any of them.
	m, err := ParseManifest([]byte(inputManifest(`{"properties":{"q":{"type":"array","items":{"type":"integer"}}}}`)), nil)
	require.NoError(t, err)
	many := `{"q":[` + strings.Repeat("1e999999,", 200) + `1]}`
	alloc := allocsOf(func() { assert.Error(t, planInput(t, m, many)) })
	assert.Less(t, alloc, uint64(20<<20))

	// Ordinary numbers, exponents included, still validate.
	assert.NoError(t, planInput(t, m, `{"q":[1,2e3,1E+2,100e-2,-0]}`))
}

// TestEnumSizeCountsInTheCost: every enum member is a comparison (an exact
// rational one for numbers), so a numeric enum of 1,500 members against an
// array of 5,000 numbers took 14 s and 2 GB. The members count in the
// schema's cost, so such an input is refused at once.
func TestEnumSizeCountsInTheCost(t *testing.T) {
	var members []string
	for i := range 1500 {
		members = append(members, fmt.Sprint(100000+i))
	}
	m, err := ParseManifest([]byte(inputManifest(`{"properties":{"q":{"type":"array","items":{"enum":[`+strings.Join(members[:1000], ",")+`]}}}}`)), nil)
	require.NoError(t, err)
	input := `{"q":[` + strings.Repeat("7,", 4999) + `7]}`
	var e *Error
	alloc := allocsOf(func() { require.ErrorAs(t, planInput(t, m, input), &e) })
	assert.Contains(t, e.Message, "validation budget")
	assert.Less(t, alloc, uint64(20<<20))

	// An enum larger than the cost limit makes the schema too complex.
	var short []string
	for i := range DefaultMaxSchemaCost {
		short = append(short, fmt.Sprint(i))
	}
	_, err = ParseManifest([]byte(inputManifest(`{"properties":{"q":{"enum":[`+strings.Join(short, ",")+`]}}}`)), nil)
	assert.ErrorContains(t, err, "schema too complex")

	// A small enum over a small input validates.
	m, err = ParseManifest([]byte(inputManifest(`{"properties":{"q":{"type":"array","items":{"enum":[1,2,3]}}}}`)), nil)
	require.NoError(t, err)
	assert.NoError(t, planInput(t, m, `{"q":[1,2,3,3,2,1]}`))
}

// TestStringLengthCountsInTheBudget: a pattern or format is a scan of the
// whole string, so 500 patterns against one string of 127,000 characters
// took 4 s. Long strings (and keys) count in proportion to their length.
func TestStringLengthCountsInTheBudget(t *testing.T) {
	var patterns []string
	for i := range 400 {
		patterns = append(patterns, fmt.Sprintf(`{"pattern":"(a|b)*c%d"}`, i%10))
	}
	m, err := ParseManifest([]byte(inputManifest(`{"properties":{"q":{"allOf":[`+strings.Join(patterns, ",")+`]}}}`)), nil)
	require.NoError(t, err)
	var e *Error
	require.ErrorAs(t, planInput(t, m, `{"q":"`+strings.Repeat("ab", 63000)+`"}`), &e)
	assert.Contains(t, e.Message, "validation budget")
	m, err = ParseManifest([]byte(inputManifest(`{"propertyNames":{"allOf":[`+strings.Join(patterns, ",")+`]}}`)), nil)
	require.NoError(t, err)
	require.ErrorAs(t, planInput(t, m, `{"`+strings.Repeat("ab", 63000)+`":1}`), &e)
	assert.Contains(t, e.Message, "validation budget")
	// A short string against the same schema is validated (and fails
	// the patterns).
	require.ErrorAs(t, planInput(t, m, `{"q":"ab"}`), &e)
	assert.NotContains(t, e.Message, "validation budget")

	// A long string against a plain schema is fine.
	m, err = ParseManifest([]byte(inputManifest(`{"properties":{"q":{"type":"string","pattern":"^[ab]*$"}}}`)), nil)
	require.NoError(t, err)
	assert.NoError(t, planInput(t, m, `{"q":"`+strings.Repeat("ab", 63000)+`"}`))
}
