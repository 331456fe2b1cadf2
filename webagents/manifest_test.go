package webagents

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doc builds a manifest document from a workflow object and an actions object.
func doc(workflow, actions string) string {
	return `{"version":"0.1","workflow":` + workflow + `,"actions":` + actions + `}`
}

const (
	okWorkflow = `{"endpoint":"/api/agent/workflow"}`
	okActions  = `{"a":{}}`
)

func TestParseManifestRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // code points, not bytes
	prefixes := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf("%q", fmt.Sprintf("/p%d", i))
		}
		return "[" + strings.Join(p, ",") + "]"
	}
	actions := func(n int) string {
		a := make([]string, n)
		for i := range a {
			a[i] = fmt.Sprintf(`"a%d":{}`, i)
		}
		return "{" + strings.Join(a, ",") + "}"
	}
	schemaOf := func(chars int) string {
		// {"description":"…"} with the string padded to the given serialized size.
		return `{"description":"` + strings.Repeat("x", chars-len(`{"description":""}`)) + `"}`
	}
	tests := []struct {
		name    string
		doc     string
		problem string // substring of the path of an expected problem; "" means valid
	}{
		{"spec example", string(mustRead(t, "testdata/spec-manifest.json")), ""},
		{"minimal", doc(okWorkflow, okActions), ""},
		{"version missing", `{"workflow":` + okWorkflow + `,"actions":` + okActions + `}`, "$"},
		{"version wrong", `{"version":"0.2","workflow":` + okWorkflow + `,"actions":` + okActions + `}`, "$.version"},
		{"version number tolerated", `{"version":0.1,"workflow":` + okWorkflow + `,"actions":` + okActions + `}`, ""},
		{"workflow missing", `{"version":"0.1","actions":` + okActions + `}`, "$"},
		{"endpoint missing", doc(`{}`, okActions), "$.workflow"},
		{"endpoint empty", doc(`{"endpoint":""}`, okActions), "$.workflow.endpoint"},
		{"endpoint 2048", doc(`{"endpoint":"/`+strings.Repeat("a", 2047)+`"}`, okActions), ""},
		{"endpoint 2049", doc(`{"endpoint":"/`+strings.Repeat("a", 2048)+`"}`, okActions), "$.workflow.endpoint"},
		{"endpoint javascript", doc(`{"endpoint":"javascript:alert(1)"}`, okActions), "$.workflow.endpoint"},
		{"maxOperations 0", doc(`{"endpoint":"/e","maxOperations":0}`, okActions), "$.workflow.maxOperations"},
		{"maxOperations 1", doc(`{"endpoint":"/e","maxOperations":1,"pacing":{"maxConcurrency":1}}`, okActions), ""},
		{"maxOperations 32", doc(`{"endpoint":"/e","maxOperations":32}`, okActions), ""},
		{"maxOperations 33", doc(`{"endpoint":"/e","maxOperations":33}`, okActions), "$.workflow.maxOperations"},
		{"maxOperations fraction", doc(`{"endpoint":"/e","maxOperations":2.5}`, okActions), "$.workflow.maxOperations"},
		{"maxOperations 4.0 is an integer", doc(`{"endpoint":"/e","maxOperations":4.0}`, okActions), ""},
		{"parallel not bool", doc(`{"endpoint":"/e","parallel":"yes"}`, okActions), "$.workflow.parallel"},
		{"references not bool", doc(`{"endpoint":"/e","references":1}`, okActions), "$.workflow.references"},
		{"minIntervalMs -1", doc(`{"endpoint":"/e","pacing":{"minIntervalMs":-1}}`, okActions), "$.workflow.pacing.minIntervalMs"},
		{"minIntervalMs 2000", doc(`{"endpoint":"/e","pacing":{"minIntervalMs":2000}}`, okActions), ""},
		{"minIntervalMs 2001", doc(`{"endpoint":"/e","pacing":{"minIntervalMs":2001}}`, okActions), "$.workflow.pacing.minIntervalMs"},
		{"maxConcurrency 0", doc(`{"endpoint":"/e","pacing":{"maxConcurrency":0}}`, okActions), "$.workflow.pacing.maxConcurrency"},
		{"maxConcurrency above maxOperations", doc(`{"endpoint":"/e","maxOperations":3,"pacing":{"maxConcurrency":4}}`, okActions), "$.workflow.pacing.maxConcurrency"},
		{"maxConcurrency equal maxOperations", doc(`{"endpoint":"/e","maxOperations":3,"pacing":{"maxConcurrency":3}}`, okActions), ""},
		{"not parallel needs 1", doc(`{"endpoint":"/e","parallel":false,"pacing":{"maxConcurrency":2}}`, okActions), "$.workflow.pacing.maxConcurrency"},
		{"not parallel with 1", doc(`{"endpoint":"/e","parallel":false,"pacing":{"maxConcurrency":1}}`, okActions), ""},
		{"actions empty", doc(okWorkflow, `{}`), "$.actions"},
		{"actions 64", doc(okWorkflow, actions(64)), ""},
		{"actions 65", doc(okWorkflow, actions(65)), "$.actions"},
		{"actions not object", doc(okWorkflow, `[]`), "$.actions"},
		{"name starts with digit", doc(okWorkflow, `{"1a":{}}`), `$.actions["1a"]`},
		{"name with space", doc(okWorkflow, `{"a b":{}}`), `$.actions["a b"]`},
		{"name with punctuation", doc(okWorkflow, `{"a_b.c:d-e":{}}`), ""},
		{"name 64", doc(okWorkflow, `{"`+"a"+strings.Repeat("b", 63)+`":{}}`), ""},
		{"name 65", doc(okWorkflow, `{"`+"a"+strings.Repeat("b", 64)+`":{}}`), "$.actions.a" + strings.Repeat("b", 64)},
		{"name duplicate", doc(okWorkflow, `{"a":{},"a":{}}`), "$"},
		{"name case variant", doc(okWorkflow, `{"a":{},"A":{}}`), "$.actions.a"},
		{"schema properties differing in case are data", doc(okWorkflow,
			`{"a":{"inputSchema":{"type":"object","properties":{"id":{"type":"string"},"ID":{"type":"integer"}}}}}`), ""},
		{"duplicate inside a schema", doc(okWorkflow, `{"a":{"inputSchema":{"properties":{"id":{},"id":{}}}}}`), "$"},
		{"case-variant workflow field", doc(`{"endpoint":"/e","Endpoint":"https://evil.example/"}`, okActions), "$.workflow.endpoint"},
		{"case-variant action field", doc(okWorkflow, `{"a":{"effect":"read","Effect":"irreversible"}}`), "$.actions.a.effect"},
		{"case-variant top field", `{"version":"0.1","Version":"9","workflow":` + okWorkflow + `,"actions":` + okActions + `}`, "$.version"},
		{"invalid UTF-8 in a description", doc(okWorkflow, "{\"a\":{\"description\":\"caf\xe9\"}}"), "$"},
		{"action not object", doc(okWorkflow, `{"a":1}`), "$.actions.a"},
		{"effect write", doc(okWorkflow, `{"a":{"effect":"write"}}`), ""},
		{"effect irreversible", doc(okWorkflow, `{"a":{"effect":"irreversible"}}`), ""},
		{"effect unknown", doc(okWorkflow, `{"a":{"effect":"delete"}}`), "$.actions.a.effect"},
		{"description 500", doc(okWorkflow, `{"a":{"description":"`+long(500)+`"}}`), ""},
		{"description 501", doc(okWorkflow, `{"a":{"description":"`+long(501)+`"}}`), "$.actions.a.description"},
		{"inputSchema not object", doc(okWorkflow, `{"a":{"inputSchema":true}}`), "$.actions.a.inputSchema"},
		{"inputSchema 12000", doc(okWorkflow, `{"a":{"inputSchema":`+schemaOf(12000)+`}}`), ""},
		{"inputSchema 12001", doc(okWorkflow, `{"a":{"inputSchema":`+schemaOf(12001)+`}}`), "$.actions.a.inputSchema"},
		{"outputSchema 12001", doc(okWorkflow, `{"a":{"outputSchema":`+schemaOf(12001)+`}}`), "$.actions.a.outputSchema"},
		{"inputSchema does not compile", doc(okWorkflow, `{"a":{"inputSchema":{"type":"nonsense"}}}`), "$.actions.a.inputSchema"},
		{"outputSchema does not compile", doc(okWorkflow, `{"a":{"outputSchema":{"minimum":"x"}}}`), "$.actions.a.outputSchema"},
		{"file ref refused", doc(okWorkflow, `{"a":{"inputSchema":{"$ref":"file:///etc/passwd"}}}`), "$.actions.a.inputSchema"},
		{"remote ref refused", doc(okWorkflow, `{"a":{"inputSchema":{"$ref":"https://example.com/s.json"}}}`), "$.actions.a.inputSchema"},
		{"relative ref refused", doc(okWorkflow, `{"a":{"inputSchema":{"$ref":"other.json"}}}`), "$.actions.a.inputSchema"},
		{"remote metaschema refused", doc(okWorkflow, `{"a":{"inputSchema":{"$schema":"https://example.com/meta"}}}`), "$.actions.a.inputSchema"},
		{"local ref allowed", doc(okWorkflow, `{"a":{"inputSchema":{"$defs":{"s":{"type":"string"}},"properties":{"q":{"$ref":"#/$defs/s"}}}}}`), ""},
		{"draft-07 allowed", doc(okWorkflow, `{"a":{"inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}}}`), ""},
		{"pathPrefixes empty", doc(okWorkflow, `{"a":{"pathPrefixes":[]}}`), "$.actions.a.pathPrefixes"},
		{"pathPrefixes 16", doc(okWorkflow, `{"a":{"pathPrefixes":`+prefixes(16)+`}}`), ""},
		{"pathPrefixes 17", doc(okWorkflow, `{"a":{"pathPrefixes":`+prefixes(17)+`}}`), "$.actions.a.pathPrefixes"},
		{"pathPrefix without slash", doc(okWorkflow, `{"a":{"pathPrefixes":["products"]}}`), "$.actions.a.pathPrefixes[0]"},
		{"pathPrefix with query", doc(okWorkflow, `{"a":{"pathPrefixes":["/p?x"]}}`), "$.actions.a.pathPrefixes[0]"},
		{"pathPrefix with fragment", doc(okWorkflow, `{"a":{"pathPrefixes":["/p#x"]}}`), "$.actions.a.pathPrefixes[0]"},
		{"pathPrefix 256", doc(okWorkflow, `{"a":{"pathPrefixes":["/`+strings.Repeat("p", 255)+`"]}}`), ""},
		{"pathPrefix 257", doc(okWorkflow, `{"a":{"pathPrefixes":["/`+strings.Repeat("p", 256)+`"]}}`), "$.actions.a.pathPrefixes[0]"},
		{"one bad action invalidates all", doc(okWorkflow, `{"a":{},"b":{"effect":"x"}}`), "$.actions.b.effect"},
		{"not JSON", `{"version":`, "$"},
		{"unknown fields ignored", `{"version":"0.1","x":1,"workflow":{"endpoint":"/e","y":2,"pacing":{"z":3}},"actions":{"a":{"w":4}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.doc), nil)
			if tt.problem == "" {
				require.NoError(t, err)
				assert.NotNil(t, m)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			var paths []string
			for _, p := range ve.Problems {
				paths = append(paths, p.Path)
			}
			assert.Contains(t, paths, tt.problem, "problems: %v", ve.Problems)
		})
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	return specManifestJSON(t)
}

func TestParseManifestReportsEveryProblem(t *testing.T) {
	_, err := ParseManifest([]byte(doc(`{"endpoint":"","maxOperations":99}`,
		`{"a":{"effect":"x","description":1},"b":{"pathPrefixes":["nope"]}}`)), nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	for _, want := range []string{"$.workflow.endpoint", "$.workflow.maxOperations", "$.actions.a.effect",
		"$.actions.a.description", "$.actions.b.pathPrefixes[0]"} {
		assert.Contains(t, paths, want)
	}
	assert.Contains(t, err.Error(), "more")
}

func TestParseManifestDefaults(t *testing.T) {
	m, err := ParseManifest([]byte(doc(okWorkflow, `{"a":{}}`)), nil)
	require.NoError(t, err)
	assert.Equal(t, Workflow{Endpoint: "/api/agent/workflow", MaxOperations: 32, Parallel: true, References: true,
		Pacing: Pacing{MinIntervalMs: 0, MaxConcurrency: 4}}, m.Workflow)
	a := m.Action("a")
	require.NotNil(t, a)
	assert.Equal(t, EffectRead, a.Effect)
	assert.Equal(t, []string{"/"}, a.PathPrefixes)
	assert.Empty(t, m.Warnings)

	m, err = ParseManifest([]byte(doc(`{"endpoint":"/e","maxOperations":2}`, okActions)), nil)
	require.NoError(t, err)
	assert.Equal(t, 2, m.Workflow.Pacing.MaxConcurrency, "min(maxOperations, 4)")

	m, err = ParseManifest([]byte(doc(`{"endpoint":"/e","parallel":false}`, okActions)), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Workflow.Pacing.MaxConcurrency, "1 when not parallel")
}

func TestParseManifestWarnings(t *testing.T) {
	m, err := ParseManifest([]byte(`{"version":0.1,"extra":true,"workflow":{"endpoint":"https://shop.example/api","z":1},"actions":{"a":{"w":1}}}`),
		&ParseOptions{BaseURL: "https://shop.example/"})
	require.NoError(t, err)
	var got []string
	for _, w := range m.Warnings {
		got = append(got, w.Path)
	}
	assert.ElementsMatch(t, []string{"$.version", "$.extra", "$.workflow.z", "$.actions.a.w", "$.workflow.endpoint"}, got)
}

func TestParseManifestEndpointOrigin(t *testing.T) {
	tests := []struct {
		endpoint, base string
		ok             bool
	}{
		{"/api/agent/workflow", "https://shop.example/products/x", true},
		{"https://shop.example/api", "https://shop.example/", true},
		{"https://shop.example:443/api", "https://shop.example/", true},
		{"api/agent", "https://shop.example/products/x", true}, // relative: resolves same-origin (with a warning)
		{"//evil.example/api", "https://shop.example/", false},
		{"https://evil.example/api", "https://shop.example/", false},
		{"http://shop.example/api", "https://shop.example/", false},
		{"https://shop.example:8443/api", "https://shop.example/", false},
		{"data:text/plain,x", "https://shop.example/", false},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			_, err := ParseManifest([]byte(doc(`{"endpoint":"`+tt.endpoint+`"}`, okActions)), &ParseOptions{BaseURL: tt.base})
			if tt.ok {
				assert.NoError(t, err)
			} else {
				var ve *ValidationError
				require.ErrorAs(t, err, &ve)
				assert.Equal(t, "$.workflow.endpoint", ve.Problems[0].Path)
			}
		})
	}
}

func TestParseDocument(t *testing.T) {
	manifest := doc(okWorkflow, okActions)
	fence := func(info string) string { return "```" + info + "\n" + manifest + "\n```\n" }
	tests := []struct {
		name     string
		doc      string
		strict   bool
		err      error // sentinel, or errInvalid for a *ValidationError
		warnings int
	}{
		{"raw JSON", manifest, false, nil, 0},
		{"raw JSON with space and BOM", "\xef\xbb\xbf \n" + manifest + "\n", false, nil, 0},
		{"markdown webagents", "# Shop\n\nProse.\n\n" + fence("webagents") + "\nMore prose.\n", true, nil, 0},
		{"markdown webagents-json", fence("webagents-json"), true, nil, 0},
		{"info case-insensitive", fence("WebAgents"), true, nil, 0},
		{"info with trailing space", "```webagents  \n" + manifest + "\n```\n", true, nil, 0},
		// What the originating client cannot read, or reads differently, is invalid here.
		{"tilde fence", "~~~webagents\n" + manifest + "\n~~~\n", true, errInvalid, 0},
		{"``` inside the block's JSON", "```webagents\n" +
			doc(okWorkflow, `{"a":{"description":"Run `+"```"+`ls`+"```"+`."}}`) + "\n```\n", true, errInvalid, 0},
		{"a quoted example before the block", "````md\n" + "```webagents\n{}\n```\n" + "````\n" + fence("webagents"), false, errInvalid, 0},
		{"over 64000 UTF-16 units: invalid", fence("webagents") + strings.Repeat("😀", 32_000), true, errInvalid, 0},
		{"over 64000 UTF-16 units: a warning for the client", fence("webagents") + strings.Repeat("😀", 32_000), false, nil, 1},
		{"indented fence", "   ```webagents\n" + manifest + "\n   ```\n", true, nil, 0},
		{"longer closing fence", "```webagents\n" + manifest + "\n`````\n", true, nil, 0},
		{"CRLF", strings.ReplaceAll(fence("webagents"), "\n", "\r\n"), true, nil, 0},
		{"info with more words", fence("webagents json"), true, ErrNoManifest, 0},
		{"json fence", fence("json"), true, ErrNoManifest, 0},
		{"four-space indent is code", "    ```webagents\n    " + manifest + "\n    ```\n", true, ErrNoManifest, 0},
		{"heading format", "# Shop\n\n## Actions\n\n- find: finds things\n", true, ErrNoManifest, 0},
		{"empty", "", true, ErrNoManifest, 0},
		{"quoted inside another fence", "````md\n" + fence("webagents") + "````\n", true, ErrNoManifest, 0},
		{"two blocks strict", fence("webagents") + fence("webagents-json"), true, errInvalid, 0},
		{"two blocks lenient takes first", fence("webagents") + "```webagents\n{\n```\n", false, nil, 1},
		{"unterminated", "```webagents\n" + manifest + "\n", true, errInvalid, 0},
		{"first block invalid", "```webagents\n{\"version\":\"0.1\"}\n```\n" + fence("webagents"), false, errInvalid, 0},
		{"64000 chars", manifest + strings.Repeat(" ", MaxDocumentChars-len(manifest)), true, nil, 0},
		{"64001 chars", manifest + strings.Repeat(" ", MaxDocumentChars+1-len(manifest)), true, ErrDocumentTooLarge, 0},
		{"64001 code points", "\n" + fence("webagents") + strings.Repeat("é", MaxDocumentChars), true, ErrDocumentTooLarge, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseDocument([]byte(tt.doc), &ParseOptions{Strict: tt.strict})
			switch tt.err {
			case nil:
				require.NoError(t, err)
				assert.Len(t, m.Warnings, tt.warnings)
				assert.NotNil(t, m.Action("a"))
			case errInvalid:
				var ve *ValidationError
				assert.ErrorAs(t, err, &ve)
			default:
				assert.ErrorIs(t, err, tt.err)
			}
		})
	}
}

var errInvalid = errors.New("a *ValidationError")

func TestActionsFor(t *testing.T) {
	m := manifestWith(t, "", `{
		"any":{},
		"store":{"pathPrefixes":["/store/"]},
		"products":{"pathPrefixes":["/products","/p"]}}`)
	names := func(path string) []string {
		var out []string
		for _, a := range m.ActionsFor(path) {
			out = append(out, a.Name)
		}
		return out
	}
	assert.Equal(t, []string{"any", "store"}, names("/store"))
	assert.Equal(t, []string{"any", "store"}, names("/store/x/y"))
	assert.Equal(t, []string{"any"}, names("/storefront"))
	assert.Equal(t, []string{"any"}, names("/Store/x"), "case-sensitive")
	assert.Equal(t, []string{"any", "products"}, names("/p"))
	assert.Equal(t, []string{"any", "products"}, names("/products/kbd-75"))
	assert.Equal(t, []string{"any", "products"}, names("/store/../products/x"), "dot segments normalized")
	assert.Equal(t, []string{"any"}, names(""))
}

func TestModelView(t *testing.T) {
	m := specManifest(t)
	mv := m.ModelView("/products/kbd-75")
	raw, err := json.Marshal(mv)
	require.NoError(t, err)
	s := string(raw)
	assert.Contains(t, s, `"trust":"untrusted_external_data"`)
	assert.NotContains(t, s, "endpoint")
	assert.NotContains(t, s, "pathPrefixes")
	assert.NotContains(t, s, "/api/agent/workflow")
	assert.Len(t, mv.Actions, 3)
	assert.Empty(t, m.ModelView("/about").Actions)
}

func TestDocumentsRoundTrip(t *testing.T) {
	m := specManifest(t)
	js, err := m.JSONDocument()
	require.NoError(t, err)
	md, err := m.MarkdownDocument()
	require.NoError(t, err)
	fromJS, err := ParseDocument(js, &ParseOptions{Strict: true})
	require.NoError(t, err)
	fromMD, err := ParseDocument(md, &ParseOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, m.Workflow, fromJS.Workflow)
	assert.Equal(t, m.Workflow, fromMD.Workflow)
	assert.Len(t, fromMD.Actions, 3)
	rawMD, _, err := extractManifest(md, true)
	require.NoError(t, err)
	assert.True(t, sameJSON(rawMD, js), "the two documents carry the same manifest")
	assert.JSONEq(t, string(m.Action("catalog.find").InputSchema), string(fromMD.Action("catalog.find").InputSchema))
}

func TestProblemPaths(t *testing.T) {
	assert.Equal(t, "$", pointerToPath(""))
	assert.Equal(t, `$.actions["cart.add"].pathPrefixes[0]`, pointerToPath("/actions/cart.add/pathPrefixes/0"))
	assert.Equal(t, `$["a/b"]["~"]`, pointerToPath("/a~1b/~0"))
}

// TestAgreementWithTheOriginatingClient: issue 12 item 4. What it refuses
// is refused here; where it reads a string differently, a warning.
func TestAgreementWithTheOriginatingClient(t *testing.T) {
	_, err := ParseManifest([]byte(doc(`{"endpoint":"   "}`, okActions)), nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "$.workflow.endpoint", ve.Problems[0].Path)
	assert.Contains(t, ve.Problems[0].Message, "only white space")

	warned := func(t *testing.T, manifest, path, msg string) {
		t.Helper()
		m, err := ParseManifest([]byte(manifest), nil)
		require.NoError(t, err)
		for _, w := range m.Warnings {
			if w.Path == path && strings.Contains(w.Message, msg) {
				return
			}
		}
		t.Errorf("no warning %q at %s in %v", msg, path, m.Warnings)
	}
	warned(t, doc(`{"endpoint":" /api/agent/workflow "}`, okActions), "$.workflow.endpoint", "white space")
	warned(t, doc(okWorkflow, `{"a":{"description":"Finds things. "}}`), "$.actions.a.description", "white space")
	warned(t, doc(okWorkflow, `{"a":{"pathPrefixes":["/shop\t"]}}`), "$.actions.a.pathPrefixes[0]", "white space")
	// 300 emoji are 300 code points (allowed) and 600 UTF-16 units.
	warned(t, doc(okWorkflow, `{"a":{"description":"`+strings.Repeat("😀", 300)+`"}}`), "$.actions.a.description", "600 UTF-16 code units")
	warned(t, doc(okWorkflow, `{"a":{"pathPrefixes":["/`+strings.Repeat("😀", 200)+`"]}}`), "$.actions.a.pathPrefixes[0]", "UTF-16")
	warned(t, doc(okWorkflow, `{"a":{"inputSchema":{"description":"`+strings.Repeat("😀", 7000)+`"}}}`), "$.actions.a.inputSchema", "UTF-16")

	m, err := ParseManifest([]byte(doc(okWorkflow, `{"a":{"description":"Finds things."}}`)), nil)
	require.NoError(t, err)
	assert.Empty(t, m.Warnings)
}

// TestUTF16LimitsAreErrors: issue 24 item 1. The originating client counts
// UTF-16 code units (JavaScript's length) and refuses a manifest past a
// limit, so validate, check, the strict parse and NewHandler must too; the
// client keeps reading it, with a warning.
func TestUTF16LimitsAreErrors(t *testing.T) {
	// 1e20 is 4 characters here and 21 in JSON.stringify's output.
	var numbers strings.Builder
	for i := range 600 {
		if i > 0 {
			numbers.WriteString(",")
		}
		numbers.WriteString("1e20")
	}
	tests := []struct{ name, manifest, path string }{
		{"endpoint", doc(`{"endpoint":"/`+strings.Repeat("😀", 1100)+`"}`, okActions), "$.workflow.endpoint"},
		{"description", doc(okWorkflow, `{"a":{"description":"`+strings.Repeat("😀", 300)+`"}}`), "$.actions.a.description"},
		{"path prefix", doc(okWorkflow, `{"a":{"pathPrefixes":["/`+strings.Repeat("😀", 200)+`"]}}`), "$.actions.a.pathPrefixes[0]"},
		{"schema", doc(okWorkflow, `{"a":{"inputSchema":{"description":"`+strings.Repeat("😀", 7000)+`"}}}`), "$.actions.a.inputSchema"},
		{"schema as JSON.stringify writes its numbers", doc(okWorkflow, `{"a":{"outputSchema":{"examples":[`+numbers.String()+`]}}}`), "$.actions.a.outputSchema"},
		{"document", "```webagents\n" + doc(okWorkflow, `{"a":{}}`) + "\n```\n" + strings.Repeat("😀", 32_000), "document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDocument([]byte(tt.manifest), &ParseOptions{BaseURL: "https://shop.example/", Strict: true})
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, "the strict parse refuses it")
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, tt.path, ve.Problems[0].Path)
			assert.Contains(t, ve.Problems[0].Message, "UTF-16 code units")

			m, err := ParseDocument([]byte(tt.manifest), nil)
			require.NoError(t, err, "the client reads it")
			assert.Contains(t, joinProblems(m.Warnings), "UTF-16 code units")

			var srv *httptest.Server
			if tt.path == "document" {
				srv = docServer(t, map[string]func(http.ResponseWriter, *http.Request){
					MarkdownPath:  serve("text/markdown; charset=utf-8", tt.manifest),
					WellKnownPath: serve("application/json", doc(okWorkflow, `{"a":{}}`)),
				})
			} else {
				srv = mirrorSite(t, tt.manifest)
			}
			var c Client
			rep, err := c.Check(t.Context(), srv.URL+"/")
			require.NoError(t, err)
			assert.False(t, rep.Valid, "the checker refuses it")
			assert.Contains(t, joinProblems(rep.Problems), "UTF-16 code units")
			if tt.path == "document" {
				return
			}
			_, err = NewHandler(m, map[string]ActionHandler{"a": ActionFunc(nil)}, &HandlerOptions{Origin: "https://shop.example"})
			require.Error(t, err, "a site must not serve it")
			assert.Contains(t, err.Error(), "UTF-16 code units")
		})
	}
}

// TestNewHandlerRefusesAnOversizedMarkdownDocument: the JSON document fits
// the 64,000-character limit, the markdown one (prose and fence around the
// same JSON) does not; clients would refuse it.
func TestNewHandlerRefusesAnOversizedMarkdownDocument(t *testing.T) {
	m := &Manifest{Version: Version, Actions: map[string]*Action{},
		Workflow: Workflow{Endpoint: "/api/agent/workflow", MaxOperations: 32, Parallel: true, References: true, Pacing: Pacing{MaxConcurrency: 4}}}
	actions := map[string]ActionHandler{}
	schema := func(n int) json.RawMessage {
		return json.RawMessage(`{"description":"` + strings.Repeat("x", n) + `"}`)
	}
	for i := range 7 {
		name := fmt.Sprintf("a%d", i)
		m.Actions[name] = &Action{Name: name, Effect: EffectRead, PathPrefixes: []string{"/"}, InputSchema: schema(10_000)}
		actions[name] = ActionFunc(nil)
	}
	// The last schema fills the JSON document to 50 characters short of
	// the limit; the markdown document adds its prose and fence.
	m.Actions["a6"].InputSchema = schema(0)
	js, err := m.JSONDocument()
	require.NoError(t, err)
	m.Actions["a6"].InputSchema = schema(MaxDocumentChars - 50 - len(js))
	js, err = m.JSONDocument()
	require.NoError(t, err)
	md, err := m.MarkdownDocument()
	require.NoError(t, err)
	require.Equal(t, MaxDocumentChars-50, len(js))
	require.Greater(t, len(md), MaxDocumentChars, "the markdown document is over the limit")
	_, err = NewHandler(m, actions, &HandlerOptions{Origin: "https://shop.example"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), MarkdownPath)
}

// TestMarkdownDocumentEscapesBackticks: a description holding ``` must not
// end the rendered block for clients that look for the next ``` anywhere.
func TestMarkdownDocumentEscapesBackticks(t *testing.T) {
	m, err := ParseManifest([]byte(doc(okWorkflow, `{"a":{"description":"Run `+"```ls```"+` first."}}`)), nil)
	require.NoError(t, err)
	md, err := m.MarkdownDocument()
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(md), "```"), "only the fences")
	again, err := ParseDocument(md, &ParseOptions{Strict: true})
	require.NoError(t, err)
	assert.Equal(t, "Run ```ls``` first.", again.Action("a").Description)
}
