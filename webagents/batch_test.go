package webagents

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ops(list ...string) string {
	return `{"version":"0.1","operations":[` + strings.Join(list, ",") + `]}`
}

func TestDecodeBatch(t *testing.T) {
	manyOps := func(n int) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf(`{"id":"o%d","action":"a"}`, i)
		}
		return ops(list...)
	}
	tests := []struct {
		name string
		body string
		code Code   // "" means valid
		op   string // expected Error.Operation
	}{
		{"spec batch", ops(`{"id":"find","action":"catalog.find","input":{"query":"wireless keyboard"}}`,
			`{"id":"add","action":"cart.add","input":{"productId":{"$ref":"find.productId"}}}`,
			`{"id":"verify","action":"cart.state","input":{}}`), "", ""},
		{"not JSON", `{"version":`, CodeInvalidRequest, ""},
		{"empty", ``, CodeInvalidRequest, ""},
		{"array body", `[]`, CodeInvalidRequest, ""},
		{"trailing data", ops(`{"id":"a","action":"a"}`) + `{}`, CodeInvalidRequest, ""},
		{"duplicate key", `{"version":"0.1","version":"0.1","operations":[{"id":"a","action":"a"}]}`, CodeInvalidRequest, ""},
		{"case-variant key", `{"version":"0.1","Version":"0.2","operations":[{"id":"a","action":"a"}]}`, CodeInvalidRequest, ""},
		{"duplicate key in input", ops(`{"id":"a","action":"a","input":{"q":1,"q":2}}`), CodeInvalidRequest, ""},
		{"case-variant key in input", ops(`{"id":"a","action":"a","input":{"token":"a","Token":"b"}}`), CodeInvalidRequest, ""},
		{"invalid UTF-8 in input", ops("{\"id\":\"a\",\"action\":\"a\",\"input\":{\"q\":\"\xff\"}}"), CodeInvalidRequest, ""},
		// Decoded as U+FFFD by encoding/json, kept by JavaScript: refused as
		// invalid UTF-8 is.
		{"lone surrogate escape in input", ops(`{"id":"a","action":"a","input":{"q":"\ud800"}}`), CodeInvalidRequest, ""},
		{"lone surrogate escape in a key", ops(`{"id":"a","action":"a","input":{"\udc00":1}}`), CodeInvalidRequest, ""},
		{"surrogate pair escape in input", ops(`{"id":"a","action":"a","input":{"q":"\ud834\udd1e"}}`), "", ""},
		{"missing version", `{"operations":[{"id":"a","action":"a"}]}`, CodeInvalidRequest, ""},
		{"numeric version", `{"version":0.1,"operations":[{"id":"a","action":"a"}]}`, CodeInvalidRequest, ""},
		{"unsupported version", `{"version":"0.2","operations":[{"id":"a","action":"a"}]}`, CodeUnsupportedVersion, ""},
		{"missing operations", `{"version":"0.1"}`, CodeInvalidRequest, ""},
		{"null operations", `{"version":"0.1","operations":null}`, CodeInvalidRequest, ""},
		{"empty operations", ops(), CodeInvalidRequest, ""},
		{"operations not array", `{"version":"0.1","operations":{}}`, CodeInvalidRequest, ""},
		{"32 operations", manyOps(32), "", ""},
		{"33 operations", manyOps(33), CodeTooManyOperations, ""},
		{"operation not object", ops(`1`), CodeInvalidRequest, ""},
		{"missing id", ops(`{"action":"a"}`), CodeInvalidRequest, ""},
		{"id not string", ops(`{"id":1,"action":"a"}`), CodeInvalidRequest, ""},
		{"id starts with digit", ops(`{"id":"1a","action":"a"}`), CodeInvalidRequest, ""},
		{"id with dot", ops(`{"id":"a.b","action":"a"}`), CodeInvalidRequest, ""},
		{"id 64", ops(`{"id":"a` + strings.Repeat("b", 63) + `","action":"a"}`), "", ""},
		{"id 65", ops(`{"id":"a` + strings.Repeat("b", 64) + `","action":"a"}`), CodeInvalidRequest, ""},
		{"duplicate ids", ops(`{"id":"a","action":"a"}`, `{"id":"a","action":"a"}`), CodeInvalidRequest, "a"},
		{"missing action", ops(`{"id":"a"}`), CodeInvalidRequest, "a"},
		{"name alias", ops(`{"id":"a","name":"a"}`), "", ""},
		{"name and action agree", ops(`{"id":"a","name":"a","action":"a"}`), "", ""},
		{"name and action disagree", ops(`{"id":"a","name":"b","action":"a"}`), CodeInvalidRequest, "a"},
		{"null input", ops(`{"id":"a","action":"a","input":null}`), CodeInvalidRequest, "a"},
		{"array input", ops(`{"id":"a","action":"a","input":[]}`), CodeInvalidRequest, "a"},
		{"string input", ops(`{"id":"a","action":"a","input":"x"}`), CodeInvalidRequest, "a"},
		{"non-string $ref", ops(`{"id":"a","action":"a","input":{"x":{"$ref":1}}}`), CodeInvalidRequest, "a"},
		{"escaped non-string $ref", ops(`{"id":"a","action":"a","input":{"x":{"\u0024ref":true}}}`), CodeInvalidRequest, "a"},
		{"$ref with other keys is data", ops(`{"id":"a","action":"a","input":{"x":{"$ref":1,"y":2}}}`), "", ""},
		{"dependsOn repeated", ops(`{"id":"a","action":"a"}`, `{"id":"b","action":"a","dependsOn":["a","a"]}`), CodeInvalidRequest, "b"},
		{"dependsOn not strings", ops(`{"id":"a","action":"a","dependsOn":[1]}`), CodeInvalidRequest, ""},
		{"unknown fields ignored", `{"version":"0.1","x":1,"operations":[{"id":"a","action":"a","extra":true}]}`, "", ""},
		{"pacing echoed", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":120,"maxConcurrency":2}}`, "", ""},
		{"pacing looser than any server is ignored", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":-1,"maxConcurrency":64}}`, "", ""},
		{"pacing stricter than the protocol allows", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":5000}}`, "", ""},
		{"pacing nulls are absent", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":null,"maxConcurrency":null}}`, "", ""},
		{"pacing not a number", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":"120"}}`, CodeInvalidRequest, ""},
		{"pacing fraction", `{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"maxConcurrency":1.5}}`, CodeInvalidRequest, ""},
		{"input too large", ops(`{"id":"a","action":"a","input":{"s":"` + strings.Repeat("é", MaxInputChars) + `"}}`), CodePayloadTooLarge, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DecodeBatch([]byte(tt.body))
			if tt.code == "" {
				require.NoError(t, err)
				require.NotEmpty(t, b.Operations)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.op, e.Operation)
			assert.Equal(t, codeStatus[tt.code], e.HTTPStatus())
		})
	}
}

// TestDecodeBatchBoundsDependsOn: a dependsOn list longer than a batch
// can be is refused before its entries are compared with each other,
// which for the 14,000 entries of a default-size body took a second of
// CPU (and a minute for a 1 MB body) before anything said no.
func TestDecodeBatchBoundsDependsOn(t *testing.T) {
	list := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf(`"x%05d"`, i)
		}
		return "[" + strings.Join(ids, ",") + "]"
	}
	b, err := DecodeBatch([]byte(ops(`{"id":"a","action":"a","dependsOn":` + list(MaxOperationsLimit) + `}`)))
	require.NoError(t, err, "as long as a batch can be is left to NewPlan")
	assert.Len(t, b.Operations[0].DependsOn, MaxOperationsLimit)

	for _, n := range []int{MaxOperationsLimit + 1, 20000} {
		_, err := DecodeBatch([]byte(ops(`{"id":"a","action":"a"}`, `{"id":"b","action":"a","dependsOn":`+list(n)+`}`)))
		var e *Error
		require.ErrorAs(t, err, &e, n)
		assert.Equal(t, CodeInvalidRequest, e.Code)
		assert.Equal(t, "b", e.Operation)
		assert.Equal(t, fmt.Sprintf("dependsOn lists at most %d ids.", MaxOperationsLimit), e.Message)
	}
	// A wrong type anywhere in a long list is still the error.
	long := strings.TrimSuffix(list(100), "]") + ",1]"
	_, err = DecodeBatch([]byte(ops(`{"id":"a","action":"a","dependsOn":` + long + `}`)))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "operations.dependsOn")
}

func TestDecodeBatchDefaults(t *testing.T) {
	b, err := DecodeBatch([]byte(ops(`{"id":"a","name":"x"}`, `{"id":"b","action":"y","input":{"k":[1]},"dependsOn":["a"]}`)))
	require.NoError(t, err)
	assert.Equal(t, []Operation{
		{ID: "a", Action: "x", Input: json.RawMessage(`{}`)},
		{ID: "b", Action: "y", Input: json.RawMessage(`{"k":[1]}`), DependsOn: []string{"a"}},
	}, b.Operations)
}

func TestReferences(t *testing.T) {
	result := map[string]any{"results": []any{map[string]any{"id": "kbd-75"}}, "n": 3.0, "1": "key"}
	tests := []struct {
		ref   string
		ok    bool
		value any
	}{
		{"find", true, result},
		{"find.results.0.id", true, "kbd-75"},
		{"find.n", true, 3.0},
		{"find.1", true, "key"}, // a decimal segment is an object key on objects
		{"find.results.1", false, nil},
		{"find.results.01", false, nil},
		{"find.results.-1", false, nil},
		{"find.results.x", false, nil},
		{"find.missing", false, nil},
		{"find.n.x", false, nil},
		{"find.results.0.id.x", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			r, ok := ParseReference(tt.ref)
			require.True(t, ok)
			assert.Equal(t, tt.ref, r.String())
			v, found := r.Resolve(result)
			assert.Equal(t, tt.ok, found)
			if tt.ok {
				assert.Equal(t, tt.value, v)
			}
		})
	}
	for _, bad := range []string{"", ".x", "find.", "find..x", "1find", "fi nd"} {
		_, ok := ParseReference(bad)
		assert.False(t, ok, bad)
	}
}
