package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// The only Node WebAgents site there is, kowo-co/betterwright-bench's
// bench/sites/webagents-demo/server.mjs, rebuilt in Go from its source so
// that the CLI is tested against what it answers: the same documents (the
// manifest as JSON.stringify writes it, in a fence after prose, and
// indented by two at the well-known path), the same headers and status codes
// (200, a 400 {"error"} when an operation throws, 302 at /, 404 text for
// anything else, HEAD included), and its batch answer, which is not a
// webagents/0.1 envelope: {"ok":true,"results":[{"id","action","output"}]},
// operations run in list order, $ref resolved by walking the earlier
// outputs. Checked against the Node server itself (node server.mjs): the
// bodies and status codes are the ones it sends, byte for byte, and so are
// its headers but for Node's own (Connection, Keep-Alive, and an empty
// chunked body for the 302).

// benchManifest is JSON.stringify(MANIFEST) of server.mjs.
const benchManifest = `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow","maxOperations":16,"parallel":true,"references":true,"pacing":{"minIntervalMs":50,"maxConcurrency":2}},` +
	`"actions":{"search":{"description":"Search the product catalog by query string","effect":"read","pathPrefixes":["/catalog"],` +
	`"inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]},` +
	`"outputSchema":{"type":"object","properties":{"results":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"price":{"type":"number"}}}}}}},` +
	`"get_product":{"description":"Fetch one product by id","effect":"read","pathPrefixes":["/catalog"],` +
	`"inputSchema":{"type":"object","properties":{"productId":{"type":"string"}},"required":["productId"]}},` +
	`"set_highlight":{"description":"Highlight a product on the page (write; refreshes UI)","effect":"write","pathPrefixes":["/catalog"],` +
	`"inputSchema":{"type":"object","properties":{"productId":{"type":"string"}},"required":["productId"]}}}}`

type benchProduct struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Price    float64 `json:"price"`
	Stock    int     `json:"stock"`
	Category string  `json:"category"`
}

var benchCatalog = []benchProduct{
	{"kb-1", "Wireless Keyboard", 49.99, 12, "peripherals"},
	{"ms-2", "Ergonomic Mouse", 29.5, 40, "peripherals"},
	{"hd-3", "USB-C Hub", 39.0, 8, "adapters"},
	{"mn-4", "27-inch Monitor", 249.0, 5, "displays"},
	{"cb-5", "Braided Cable", 12.0, 100, "adapters"},
}

// benchSite serves the bench site; posts counts the batches it received.
func benchSite(t *testing.T) (srv *httptest.Server, posts *atomic.Int32) {
	t.Helper()
	posts = new(atomic.Int32)
	var highlight atomic.Value // the product id the last set_highlight chose, or nil
	markdown := "# Agent actions\n\nThis prose is documentation only and must never enter model context.\n\n```webagents\n" + benchManifest + "\n```\n"
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, []byte(benchManifest), "", "  "))
	send := func(w http.ResponseWriter, status int, body, contentType string) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		get := r.Method == http.MethodGet
		switch {
		case get && r.URL.Path == "/webagents.md":
			send(w, 200, markdown, "text/markdown; charset=utf-8")
		case get && r.URL.Path == "/.well-known/webagents.json":
			send(w, 200, indented.String(), "application/json; charset=utf-8")
		case r.Method == http.MethodPost && r.URL.Path == "/api/agent/workflow":
			posts.Add(1)
			raw, err := io.ReadAll(io.LimitReader(r.Body, 200_001))
			if err != nil || len(raw) > 200_000 {
				panic(http.ErrAbortHandler) // req.destroy()
			}
			out, err := benchRun(raw, &highlight)
			if err != nil {
				msg, _ := json.Marshal(map[string]string{"error": err.Error()})
				send(w, 400, string(msg), "application/json")
				return
			}
			send(w, 200, out, "application/json; charset=utf-8")
		case get && r.URL.Path == "/":
			w.Header().Set("Location", "/catalog")
			w.WriteHeader(http.StatusFound)
		case get && r.URL.Path == "/catalog":
			send(w, 200, "<!doctype html><title>WebAgents Demo Catalog</title>", "text/html; charset=utf-8")
		default:
			send(w, 404, "not found", "text/plain")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, posts
}

// benchRun is runOperations of server.mjs: each operation in list order,
// its input's $refs walked through the earlier outputs; an operation that
// throws fails the whole answer (the operations before it have run).
func benchRun(raw []byte, highlight *atomic.Value) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var body struct {
		Operations []struct {
			ID     string `json:"id"`
			Action string `json:"action"`
			Input  any    `json:"input"`
		} `json:"operations"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return "", err
	}
	outputs := map[string]any{}
	var results []string
	for _, op := range body.Operations {
		if op.Input == nil {
			op.Input = map[string]any{}
		}
		input, _ := benchResolve(op.Input, outputs).(map[string]any)
		if input == nil {
			field := "productId"
			if op.Action == "search" {
				field = "query"
			}
			return "", fmt.Errorf("Cannot read properties of undefined (reading '%s')", field)
		}
		var output any
		switch op.Action {
		case "search":
			q, _ := input["query"].(string)
			q = strings.ToLower(q)
			type hit struct {
				ID       string  `json:"id"`
				Name     string  `json:"name"`
				Price    float64 `json:"price"`
				Category string  `json:"category"`
			}
			hits := []hit{}
			for _, p := range benchCatalog {
				if strings.Contains(strings.ToLower(p.Name), q) || strings.Contains(p.Category, q) || strings.Contains(p.ID, q) {
					hits = append(hits, hit{p.ID, p.Name, p.Price, p.Category})
				}
			}
			output = struct {
				Results []hit `json:"results"`
			}{hits}
		case "get_product":
			var product *benchProduct
			for i := range benchCatalog {
				if id, _ := input["productId"].(string); benchCatalog[i].ID == id {
					product = &benchCatalog[i]
				}
			}
			output = struct {
				Product *benchProduct `json:"product"`
			}{product}
		case "set_highlight":
			id, _ := input["productId"].(string)
			var chosen *string
			if id != "" {
				chosen = &id
			}
			highlight.Store(chosen)
			output = struct {
				OK          bool    `json:"ok"`
				HighlightID *string `json:"highlightId"`
			}{true, chosen}
		default:
			return "", fmt.Errorf("Unknown action: %s", op.Action)
		}
		encoded, _ := json.Marshal(output)
		var generic any
		_ = json.Unmarshal(encoded, &generic)
		outputs[op.ID] = generic
		id, _ := json.Marshal(op.ID)
		action, _ := json.Marshal(op.Action)
		results = append(results, `{"id":`+string(id)+`,"action":`+string(action)+`,"output":`+string(encoded)+`}`)
	}
	return `{"ok":true,"results":[` + strings.Join(results, ",") + `]}`, nil
}

// benchResolve is resolveRef of server.mjs: an object whose $ref is a
// string is replaced by the path's value in the outputs (nil when it
// leads nowhere); other objects are resolved member by member; arrays and
// scalars are left alone.
func benchResolve(v any, outputs map[string]any) any {
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if ref, ok := obj["$ref"].(string); ok {
		path := strings.Split(ref, ".")
		cur := outputs[path[0]]
		for _, seg := range path[1:] {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[seg]
			case []any:
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(c) {
					return nil
				}
				cur = c[i]
			default:
				return nil
			}
		}
		return cur
	}
	out := make(map[string]any, len(obj))
	for k, e := range obj {
		out[k] = benchResolve(e, outputs)
	}
	return out
}

// TestRunAgainstTheNodeBenchSite: issue 24 item 2. The bench site runs the
// batch and answers {"results":[{"id","action","output"}]}: run reads it,
// with a warning, instead of exiting 4 after the site has run the batch.
func TestRunAgainstTheNodeBenchSite(t *testing.T) {
	srv, posts := benchSite(t)
	page := srv.URL + "/catalog"

	code, stdout, stderr := runCLI(t, srv.Client(), "discover", page)
	require.Equal(t, exitOK, code, stdout+stderr)
	assert.Contains(t, stdout, `"search"`)
	assert.Contains(t, stdout, `"set_highlight"`)

	// A read, and one that takes its input from it by $ref.
	batch := writeFile(t, "b.json", `[{"id":"s","action":"search","input":{"query":"hub"}},`+
		`{"id":"p","action":"get_product","input":{"productId":{"$ref":"s.results.0.id"}}}]`)
	code, stdout, stderr = runCLI(t, srv.Client(), "run", page, "--batch", batch)
	require.Equal(t, exitOK, code, stdout+stderr)
	assert.Contains(t, stderr, "warning: the response is not a webagents/0.1 envelope")
	assert.Contains(t, stderr, "read leniently")
	var resp webagents.Response
	require.NoError(t, json.Unmarshal([]byte(stdout), &resp), stdout)
	assert.True(t, resp.OK)
	assert.JSONEq(t, `{"results":[{"id":"hd-3","name":"USB-C Hub","price":39,"category":"adapters"}]}`, string(resp.Results["s"]))
	assert.JSONEq(t, `{"product":{"id":"hd-3","name":"USB-C Hub","price":39,"stock":8,"category":"adapters"}}`, string(resp.Results["p"]))

	// A write needs the flag; with it, the site runs it.
	write := writeFile(t, "w.json", `[{"id":"h","action":"set_highlight","input":{"productId":"kb-1"}}]`)
	before := posts.Load()
	code, _, stderr = runCLI(t, srv.Client(), "run", page, "--batch", write)
	assert.Equal(t, exitInvalid, code, stderr)
	assert.Contains(t, stderr, "--allow-writes")
	assert.Equal(t, before, posts.Load(), "nothing is sent without consent")
	code, stdout, stderr = runCLI(t, srv.Client(), "run", page, "--batch", write, "--allow-writes")
	require.Equal(t, exitOK, code, stdout+stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &resp), stdout)
	assert.JSONEq(t, `{"ok":true,"highlightId":"kb-1"}`, string(resp.Results["h"]))

	// An operation that throws: the site answers 400 {"error"} after
	// running the ones before it, which says nothing of what ran. That is
	// not an envelope: the site's words are shown, and exit 4 says the
	// batch may have run.
	broken := writeFile(t, "x.json", `[{"id":"s","action":"search","input":{"query":"hub"}},`+
		`{"id":"p","action":"get_product","input":{"$ref":"s.missing"}}]`)
	code, stdout, stderr = runCLI(t, srv.Client(), "run", page, "--batch", broken)
	assert.Equal(t, exitProtocol, code, stderr)
	assert.Equal(t, `{"error":"Cannot read properties of undefined (reading 'productId')"}`+"\n", stdout)
	assert.Contains(t, stderr, "400")
	assert.Contains(t, stderr, "may have run")

	// Its root redirects to /catalog; discovery is for the page's own path.
	code, _, stderr = runCLI(t, srv.Client(), "run", srv.URL+"/", "--batch", batch)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "not in scope for this page")

	// check never posts, and says the site does not answer HEAD.
	before = posts.Load()
	code, stdout, _ = runCLI(t, srv.Client(), "check", page)
	assert.Equal(t, exitInvalid, code, stdout)
	assert.Contains(t, stdout, "HEAD")
	assert.Equal(t, before, posts.Load())
}
