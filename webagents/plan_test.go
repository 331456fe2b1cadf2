package webagents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwManifest publishes r (read), r2 (read), w (write), x (irreversible) and
// s (read with an input schema requiring a string "q").
func rwManifest(t testing.TB, workflow string) *Manifest {
	return manifestWith(t, workflow, `{
		"r":{}, "r2":{}, "w":{"effect":"write"}, "x":{"effect":"irreversible"},
		"s":{"inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}},
		"scoped":{"pathPrefixes":["/products"]}}`)
}

func mustPlan(t testing.TB, m *Manifest, body string) *Plan {
	t.Helper()
	b, err := DecodeBatch([]byte(body))
	require.NoError(t, err)
	p, err := NewPlan(m, "", b)
	require.NoError(t, err)
	return p
}

// edges renders a plan's dependencies as "id<-dep,dep id<-…".
func edges(p *Plan) string {
	var parts []string
	for i, op := range p.Operations {
		parts = append(parts, op.ID+"<-"+strings.Join(p.DependsOn(i), ","))
	}
	return strings.Join(parts, " ")
}

func TestPlanEdges(t *testing.T) {
	m := rwManifest(t, "")
	tests := []struct {
		name  string
		ops   []string
		edges string
	}{
		{"independent reads", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`, `{"id":"c","action":"r2"}`},
			"a<- b<- c<-"},
		{"spec batch: find, add by ref, verify", []string{`{"id":"find","action":"r"}`,
			`{"id":"add","action":"w","input":{"p":{"$ref":"find.productId"}}}`, `{"id":"verify","action":"r"}`},
			"find<- add<-find verify<-add"},
		{"writes in list order", []string{`{"id":"w1","action":"w"}`, `{"id":"w2","action":"w"}`, `{"id":"w3","action":"x"}`},
			"w1<- w2<-w1 w3<-w2"},
		{"read after write waits", []string{`{"id":"w1","action":"w"}`, `{"id":"r1","action":"r"}`, `{"id":"r2","action":"r"}`},
			"w1<- r1<-w1 r2<-w1"},
		{"write waits for earlier reads", []string{`{"id":"r1","action":"r"}`, `{"id":"r2","action":"r"}`, `{"id":"w1","action":"w"}`},
			"r1<- r2<- w1<-r1,r2"},
		{"mixed", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"w"}`, `{"id":"c","action":"r"}`,
			`{"id":"d","action":"r"}`, `{"id":"e","action":"x"}`, `{"id":"f","action":"r"}`},
			"a<- b<-a c<-b d<-b e<-a,b,c,d f<-e"},
		{"read referencing a later write is legal", []string{`{"id":"r","action":"r","input":{"v":{"$ref":"w.x"}}}`, `{"id":"w","action":"w"}`},
			"r<-w w<-"},
		{"read depending on a later write through another read", []string{
			`{"id":"r1","action":"r","dependsOn":["r2"]}`, `{"id":"r0","action":"r"}`, `{"id":"w","action":"w"}`,
			`{"id":"r2","action":"r","input":{"v":{"$ref":"w"}}}`},
			"r1<-r2 r0<- w<-r0 r2<-w"},
		{"explicit dependsOn kept", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r","dependsOn":["a"]}`},
			"a<- b<-a"},
		{"forward dependsOn", []string{`{"id":"a","action":"r","dependsOn":["b"]}`, `{"id":"b","action":"r"}`},
			"a<-b b<-"},
		{"ref inside array and whole input", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`,
			`{"id":"c","action":"r","input":{"list":[{"$ref":"a"},{"k":{"$ref":"b.x.0"}}]}}`},
			"a<- b<- c<-a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlan(t, m, ops(tt.ops...))
			assert.Equal(t, tt.edges, edges(p))
		})
	}
}

func TestPlanErrors(t *testing.T) {
	m := rwManifest(t, `"maxOperations":3`)
	noRefs := rwManifest(t, `"references":false`)
	tests := []struct {
		name string
		m    *Manifest
		path string
		ops  []string
		code Code
		op   string
	}{
		{"too many for the manifest", m, "", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`, `{"id":"c","action":"r"}`, `{"id":"d","action":"r"}`}, CodeTooManyOperations, ""},
		{"unknown action", m, "", []string{`{"id":"a","action":"nope"}`}, CodeUnknownAction, "a"},
		{"out of scope", m, "/about", []string{`{"id":"a","action":"scoped"}`}, CodeUnknownAction, "a"},
		{"dependsOn unknown id", m, "", []string{`{"id":"a","action":"r","dependsOn":["zz"]}`}, CodeInvalidGraph, "a"},
		{"dependsOn self", m, "", []string{`{"id":"a","action":"r","dependsOn":["a"]}`}, CodeInvalidGraph, "a"},
		{"ref unknown id", m, "", []string{`{"id":"a","action":"r","input":{"x":{"$ref":"zz.y"}}}`}, CodeInvalidGraph, "a"},
		{"ref self", m, "", []string{`{"id":"a","action":"r","input":{"$ref":"a"}}`}, CodeInvalidGraph, "a"},
		{"cycle via dependsOn", m, "", []string{`{"id":"a","action":"r","dependsOn":["b"]}`, `{"id":"b","action":"r","dependsOn":["a"]}`}, CodeInvalidGraph, ""},
		{"cycle via refs", m, "", []string{`{"id":"a","action":"r","input":{"v":{"$ref":"b"}}}`, `{"id":"b","action":"r","input":{"v":{"$ref":"a"}}}`}, CodeInvalidGraph, ""},
		{"write referencing a later write", m, "", []string{`{"id":"a","action":"w","input":{"v":{"$ref":"b"}}}`, `{"id":"b","action":"w"}`}, CodeInvalidGraph, ""},
		{"references disabled", noRefs, "", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r","input":{"v":{"$ref":"a"}}}`}, CodeReferencesDisabled, "b"},
		{"malformed ref", m, "", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"r","input":{"v":{"$ref":"a..x"}}}`}, CodeUnresolvedReference, "b"},
		{"literal input fails schema", m, "", []string{`{"id":"a","action":"r"}`, `{"id":"b","action":"s","input":{"q":1}}`}, CodeInvalidInput, "b"},
		{"missing required", m, "", []string{`{"id":"a","action":"s"}`}, CodeInvalidInput, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DecodeBatch([]byte(ops(tt.ops...)))
			require.NoError(t, err)
			_, err = NewPlan(tt.m, tt.path, b)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.op, e.Operation)
		})
	}
}

func TestPlanScopeAndSchema(t *testing.T) {
	m := rwManifest(t, "")
	b, err := DecodeBatch([]byte(ops(`{"id":"a","action":"scoped"}`, `{"id":"b","action":"s","input":{"q":"x"}}`,
		`{"id":"c","action":"s","input":{"q":{"$ref":"a.q"}}}`)))
	require.NoError(t, err)
	p, err := NewPlan(m, "/products/kbd-75", b)
	require.NoError(t, err, "in scope; a referenced input is checked when it runs, not when planned")
	assert.True(t, p.Operations[2].HasReferences)
	_, err = NewPlan(m, "", b)
	require.NoError(t, err, "no page path: no scoping")
}

func TestPlanPacing(t *testing.T) {
	m := rwManifest(t, `"pacing":{"minIntervalMs":100,"maxConcurrency":3}`)
	tests := []struct {
		name      string
		requested string
		want      Pacing
	}{
		{"none", ``, Pacing{100, 3}},
		{"stricter honoured", `,"pacing":{"minIntervalMs":300,"maxConcurrency":1}`, Pacing{300, 1}},
		{"looser ignored", `,"pacing":{"minIntervalMs":0,"maxConcurrency":8}`, Pacing{100, 3}},
		{"out-of-range looser ignored", `,"pacing":{"minIntervalMs":-5,"maxConcurrency":64}`, Pacing{100, 3}},
		{"stricter beyond the protocol capped", `,"pacing":{"minIntervalMs":5000,"maxConcurrency":0}`, Pacing{MaxMinIntervalMs, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPlan(t, m, `{"version":"0.1","operations":[{"id":"a","action":"r"}]`+tt.requested+`}`)
			assert.Equal(t, tt.want, p.Pacing)
		})
	}
	serial := rwManifest(t, `"parallel":false`)
	p := mustPlan(t, serial, `{"version":"0.1","operations":[{"id":"a","action":"r"}],"pacing":{"maxConcurrency":4}}`)
	assert.Equal(t, 1, p.Pacing.MaxConcurrency)
}

// TestPlanDecodesReferencesOnce: references are read from an input's
// text (no tree is decoded for it), and never from stale bytes: an Input
// changed after DecodeBatch is planned from its new bytes, and one changed
// after NewPlan runs as it was planned.
func TestPlanDecodesReferencesOnce(t *testing.T) {
	m := rwManifest(t, "")
	const body = `{"version":"0.1","operations":[
		{"id":"a","action":"r"},
		{"id":"b","action":"r2","input":{"p":{"$ref":"a.x"}}}]}`

	b, err := DecodeBatch([]byte(body))
	require.NoError(t, err)
	assert.Nil(t, b.refTree(1), "DecodeBatch reads the references from the text")
	assert.Nil(t, b.refTree(0), "an input without references is not decoded")
	p, err := NewPlan(m, "", b)
	require.NoError(t, err)
	assert.True(t, p.Operations[1].HasReferences)
	assert.Equal(t, "a<- b<-a", edges(p))
	assert.Nil(t, p.Operations[1].tree, "nor does NewPlan decode the input")
	copy(b.Operations[1].Input, `{"p":{"$ref":"a.y"}}`)
	out := (&Executor{Handlers: map[string]ActionHandler{
		"r": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return json.RawMessage(`{"x":1,"y":2}`), nil }),
		"r2": ActionFunc(func(_ context.Context, req *ActionRequest) (any, error) {
			return req.Input, nil
		}),
	}}).Run(t.Context(), p)
	require.Nil(t, out.Err)
	assert.JSONEq(t, `{"p":1}`, string(out.Result("b")), "the plan runs the input it planned")

	b, err = DecodeBatch([]byte(body))
	require.NoError(t, err)
	b.Operations[1].Input = []byte(`{"p":"literal"}`)
	assert.Nil(t, b.refTree(1), "a changed input is not served from the old tree")
	p, err = NewPlan(m, "", b)
	require.NoError(t, err)
	assert.False(t, p.Operations[1].HasReferences, "planned from the new bytes")
	assert.Equal(t, "a<- b<-", edges(p))

	// Nor when the bytes are changed in place, where the Input slice
	// still looks like the one decoded.
	const body3 = `{"version":"0.1","operations":[
		{"id":"a","action":"r"},{"id":"c","action":"r"},
		{"id":"b","action":"r2","input":{"p":{"$ref":"a.x"}}}]}`
	b, err = DecodeBatch([]byte(body3))
	require.NoError(t, err)
	copy(b.Operations[2].Input, `{"p":{"$ref":"c.x"}}`)
	p, err = NewPlan(m, "", b)
	require.NoError(t, err)
	assert.Equal(t, "a<- c<- b<-c", edges(p), "planned from the bytes as they are now")
	resolved, bad, err := resolveInput(p.Operations[2].Input, p.Operations[2].tree, func(id string) any {
		return map[string]any{"x": id}
	})
	require.NoError(t, err)
	require.Nil(t, bad)
	assert.JSONEq(t, `{"p":"c"}`, string(resolved), "resolved from the bytes as they are now")
}
