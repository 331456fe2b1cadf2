package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docServer serves fixed documents per path; any POST fails the test.
func docServer(t *testing.T, docs map[string]func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			t.Errorf("unexpected POST %s", r.URL.Path)
		}
		if h, ok := docs[r.URL.Path]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// mirrorSite serves manifest (JSON) at both discovery paths, in a fenced
// block at the markdown one.
func mirrorSite(t *testing.T, manifest string) *httptest.Server {
	t.Helper()
	return docServer(t, map[string]func(http.ResponseWriter, *http.Request){
		MarkdownPath:  serve("text/markdown; charset=utf-8", "```webagents\n"+manifest+"\n```\n"),
		WellKnownPath: serve("application/json", manifest),
	})
}

func serve(contentType, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write([]byte(body))
	}
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func TestDiscover(t *testing.T) {
	manifest := string(specManifestJSON(t))
	md := "# Shop\n\n```webagents\n" + manifest + "\n```\n"
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(manifest))
	}))
	defer evil.Close()
	crossEndpoint := strings.Replace(manifest, `"/api/agent/workflow"`, `"`+evil.URL+`/api"`, 1)
	tests := []struct {
		name    string
		docs    map[string]func(http.ResponseWriter, *http.Request)
		status  DiscoveryStatus
		err     error
		doc     string // expected DocumentURL path
		actions int
	}{
		{"markdown first", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", md), WellKnownPath: serve("application/json", "{")}, DiscoveryFound, nil, MarkdownPath, 3},
		{"json when markdown absent", map[string]func(http.ResponseWriter, *http.Request){
			WellKnownPath: serve("application/json", manifest)}, DiscoveryFound, nil, WellKnownPath, 3},
		{"raw JSON at the markdown path", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", manifest)}, DiscoveryFound, nil, MarkdownPath, 3},
		{"410 is absent", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: status(410), WellKnownPath: status(404)}, DiscoveryAbsent, ErrNoManifest, "", 0},
		{"nothing", nil, DiscoveryAbsent, ErrNoManifest, "", 0},
		{"heading format is absent", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", "# Shop\n\n## Actions\n- search\n")}, DiscoveryAbsent, ErrNoManifest, "", 0},
		{"html fallback page is absent", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/html", "<!doctype html><p>app</p>")}, DiscoveryAbsent, ErrNoManifest, "", 0},
		{"invalid manifest", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", "```webagents\n{\"version\":\"0.1\"}\n```\n")}, DiscoveryInvalid, nil, MarkdownPath, 0},
		{"invalid markdown, valid json", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", "```webagents\n{\n```\n"), WellKnownPath: serve("application/json", manifest)},
			DiscoveryFound, nil, WellKnownPath, 3},
		{"server error is recorded", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: status(500)}, DiscoveryUnavailable, nil, MarkdownPath, 0},
		{"too large", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: serve("text/markdown", manifest+strings.Repeat(" ", MaxDocumentChars))}, DiscoveryInvalid, ErrDocumentTooLarge, MarkdownPath, 0},
		{"cross-origin endpoint is unsafe", map[string]func(http.ResponseWriter, *http.Request){
			WellKnownPath: serve("application/json", crossEndpoint)}, DiscoveryUnsafe, ErrCrossOriginEndpoint, WellKnownPath, 0},
		{"cross-origin redirect is unsafe", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, evil.URL+WellKnownPath, http.StatusFound)
			}}, DiscoveryUnsafe, ErrUnsafeRedirect, MarkdownPath, 0},
		{"same-origin redirect followed", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath:      func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/docs/agents.md", http.StatusFound) },
			"/docs/agents.md": serve("text/markdown", md)}, DiscoveryFound, nil, MarkdownPath, 3},
		{"redirect loop", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, MarkdownPath, http.StatusFound) }},
			DiscoveryUnsafe, ErrTooManyRedirects, MarkdownPath, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := docServer(t, tt.docs)
			var c Client
			d, err := c.Discover(t.Context(), srv.URL+"/products/kbd-75")
			d = outcome(t, d, err)
			assert.Equal(t, tt.status, d.Status, "%v", d.Err)
			if tt.err != nil {
				assert.ErrorIs(t, d.Err, tt.err)
			}
			if tt.doc != "" {
				assert.Equal(t, srv.URL+tt.doc, d.DocumentURL)
			}
			assert.Len(t, d.Actions, tt.actions)
			if tt.status == DiscoveryFound {
				assert.Equal(t, srv.URL+"/api/agent/workflow", d.Endpoint)
			}
		})
	}
}

func TestDiscoverExactlyFiveRedirects(t *testing.T) {
	manifest := string(specManifestJSON(t))
	docs := map[string]func(http.ResponseWriter, *http.Request){
		"/r5": serve("application/json", manifest),
	}
	for i := 0; i < 5; i++ {
		next := "/r" + string(rune('1'+i))
		from := MarkdownPath
		if i > 0 {
			from = "/r" + string(rune('0'+i))
		}
		docs[from] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, next, http.StatusFound) }
	}
	srv := docServer(t, docs)
	var c Client
	d, err := c.Discover(t.Context(), srv.URL+"/products")
	d = outcome(t, d, err)
	assert.Equal(t, DiscoveryFound, d.Status, "%v", d.Err)
}

func TestDiscoverArguments(t *testing.T) {
	var c Client
	for _, bad := range []string{"", "ftp://x/", "/relative", "https://"} {
		_, err := c.Discover(t.Context(), bad)
		assert.Error(t, err, bad)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Discover(ctx, "http://127.0.0.1:1/")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDiscoverFirstBlockWarns(t *testing.T) {
	manifest := string(specManifestJSON(t))
	srv := docServer(t, map[string]func(http.ResponseWriter, *http.Request){
		MarkdownPath: serve("text/markdown", "```webagents\n"+manifest+"\n```\n```webagents\n{}\n```\n")})
	var c Client
	d, err := c.Discover(t.Context(), srv.URL+"/products")
	d = outcome(t, d, err)
	require.Equal(t, DiscoveryFound, d.Status)
	require.Len(t, d.Warnings, 1)
	assert.Contains(t, d.Warnings[0].Message, "2 webagents fenced blocks")
}

// siteServer serves a testSite on loopback with the given origin check.
func siteServer(t *testing.T) (*httptest.Server, *testSite, *atomic.Int32) {
	t.Helper()
	var posts atomic.Int32
	var s *testSite
	srv := httptest.NewUnstartedServer(nil)
	s = newTestSite(t, &HandlerOptions{Origin: "http://" + srv.Listener.Addr().String()})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		s.h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, s, &posts
}

func specOps() []Operation {
	return []Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}
}

func TestClientRun(t *testing.T) {
	srv, site, posts := siteServer(t)
	var c Client
	res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/products/kbd-75", specOps(), &RunOptions{AllowWrites: true})
	require.NoError(t, err)
	assert.Equal(t, 200, res.StatusCode)
	assert.True(t, res.Response.OK)
	assert.JSONEq(t, `{"items":[{"productId":"kbd-75","quantity":1}]}`, string(res.Response.Results["verify"]))
	assert.Equal(t, Pacing{120, 2}, res.Response.Pacing)
	assert.Equal(t, int32(1), posts.Load())

	site.signedIn = false
	res, err = c.DiscoverAndRun(t.Context(), srv.URL+"/products/kbd-75", specOps(), &RunOptions{AllowWrites: true})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Error{Status: 401, Code: "unauthorized", Message: "Sign in first.", Operation: "add"}, *e)
	require.NotNil(t, res)
	assert.Equal(t, []string{"verify"}, res.Response.Skipped)
	assert.Equal(t, CodeUnauthorized, res.Response.Errors["add"].Code)
}

func TestClientRunRefusesBeforeSending(t *testing.T) {
	srv, _, posts := siteServer(t)
	page := srv.URL + "/products/kbd-75"
	var c Client
	_, err := c.DiscoverAndRun(t.Context(), page, specOps(), nil)
	var ce *ConsentError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrConsentRequired)
	assert.Equal(t, "add", ce.Operation)
	// A Go caller is told the field; a program with its own way to consent
	// names it (issue 24 item 4).
	assert.EqualError(t, err, `webagents: operation "add" runs write action "cart.add", which needs RunOptions.AllowWrites`)
	assert.Equal(t, `operation "add" runs write action "cart.add", which needs --allow-writes`, ce.Refusal("--allow-writes", "--allow-irreversible"))
	irreversible := &ConsentError{Operation: "o", Action: "order.place", Effect: EffectIrreversible}
	assert.EqualError(t, irreversible, `webagents: operation "o" runs irreversible action "order.place", which needs RunOptions.AllowIrreversible`)
	assert.Equal(t, `operation "o" runs irreversible action "order.place", which needs --allow-irreversible`, irreversible.Refusal("--allow-writes", "--allow-irreversible"))

	// No action at all for /about: an action published for other pages is
	// not in scope there (issue 24 item 3), as on any other page.
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/about", specOps()[:1], nil)
	assert.ErrorIs(t, err, ErrNotInScope)
	assert.ErrorContains(t, err, "not in scope for this page")

	_, err = c.DiscoverAndRun(t.Context(), page, []Operation{{ID: "x", Action: "admin.drop"}}, nil)
	assert.ErrorIs(t, err, ErrNotPublished)
	assert.ErrorContains(t, err, "not published by this site")

	_, err = c.DiscoverAndRun(t.Context(), page, []Operation{{ID: "a", Action: "cart.state", DependsOn: []string{"a"}}}, nil)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeInvalidGraph, pe.Code)

	_, err = c.DiscoverAndRun(t.Context(), page, []Operation{{ID: "a", Action: "catalog.find", Input: json.RawMessage(`{"query":1}`)}}, nil)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, CodeInvalidInput, pe.Code)

	assert.Equal(t, int32(0), posts.Load(), "nothing was sent")

	absent := docServer(t, nil)
	_, err = c.DiscoverAndRun(t.Context(), absent.URL+"/", specOps(), nil)
	assert.ErrorIs(t, err, ErrNotAvailable)
	var de *DiscoveryError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, DiscoveryAbsent, de.Discovery.Status)
}

func TestClientRunIrreversibleConsent(t *testing.T) {
	m := manifestWith(t, "", `{"order.place":{"effect":"irreversible"}}`)
	var placed atomic.Int32
	srv := httptest.NewUnstartedServer(nil)
	h, err := NewHandler(m, map[string]ActionHandler{
		"order.place": ActionFunc(func(context.Context, *ActionRequest) (any, error) { placed.Add(1); return "ok", nil })}, &HandlerOptions{Origin: "http://" + srv.Listener.Addr().String()})
	require.NoError(t, err)
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	var c Client
	op := []Operation{{ID: "o", Action: "order.place"}}
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/", op, &RunOptions{AllowWrites: true})
	assert.ErrorIs(t, err, ErrConsentRequired, "writes allowed is not enough")
	assert.Equal(t, int32(0), placed.Load())
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/", op, &RunOptions{AllowIrreversible: true, IdempotencyKey: "order-1"})
	require.NoError(t, err)
	res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/", op, &RunOptions{AllowIrreversible: true, IdempotencyKey: "order-1"})
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Equal(t, int32(1), placed.Load())
}

func TestClientSendsInferredEdges(t *testing.T) {
	m := rwManifest(t, "")
	page := mustParseURL(t, "https://shop.example/products")
	raw, err := buildBatch(m, page, []Operation{{ID: "a", Action: "r"}, {ID: "b", Action: "w"}, {ID: "c", Action: "r"}})
	require.NoError(t, err)
	var b Batch
	require.NoError(t, json.Unmarshal(raw, &b))
	assert.Nil(t, b.Operations[0].DependsOn)
	assert.Equal(t, []string{"a"}, b.Operations[1].DependsOn)
	assert.Equal(t, []string{"b"}, b.Operations[2].DependsOn)
	assert.Equal(t, &Pacing{0, 4}, b.Pacing)
}

func TestClientRejectsBadResponses(t *testing.T) {
	manifest := string(specManifestJSON(t))
	tests := []struct {
		name string
		h    func(http.ResponseWriter, *http.Request)
	}{
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}},
		{"html", serve("text/html", "<p>hi</p>")},
		{"not an envelope", serve("application/json", `{"ok":true}`)},
		{"duplicate keys", serve("application/json", `{"ok":false,"ok":true,"protocol":"webagents/0.1"}`)},
		{"case-variant envelope keys", serve("application/json", `{"ok":false,"OK":true,"protocol":"webagents/0.1"}`)},
		{"duplicate result ids", serve("application/json", `{"ok":true,"protocol":"webagents/0.1","results":{"a":1,"a":2}}`)},
		{"ambiguous operation error", serve("application/json", `{"ok":false,"protocol":"webagents/0.1","errors":{"a":{"code":"x","Code":"y"}}}`)},
		{"trailing data", serve("application/json", `{"ok":true,"protocol":"webagents/0.1"}{}`)},
		{"too large", serve("application/json", `{"protocol":"webagents/0.1","x":"`+strings.Repeat("x", TransportLimitBytes)+`"}`)},
		// Issue 21: results for 50,000 operations nobody sent were relayed.
		{"results for ids not in the batch", serve("application/json", func() string {
			var b strings.Builder
			b.WriteString(`{"ok":true,"protocol":"webagents/0.1","results":{"a":{}`)
			for i := range 50_000 {
				fmt.Fprintf(&b, `,"x%d":1`, i)
			}
			return b.String() + "}}"
		}())},
		{"a result for an id not in the batch", serve("application/json", `{"ok":true,"protocol":"webagents/0.1","results":{"a":1,"b\u0007":2}}`)},
		{"an error for an id not in the batch", serve("application/json", `{"ok":false,"protocol":"webagents/0.1","error":"x","code":"x","errors":{"b":{"code":"x","message":"x","status":400}}}`)},
		{"a lone surrogate escape in a result", serve("application/json", `{"ok":true,"protocol":"webagents/0.1","results":{"a":"\ud800"}}`)},
		{"a duplicate key in a result", serve("application/json", `{"ok":true,"protocol":"webagents/0.1","results":{"a":{"x":1,"x":2}}}`)},
		{"skipped ids not in the batch", serve("application/json", `{"ok":false,"protocol":"webagents/0.1","error":"x","code":"x","skipped":["b"]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case WellKnownPath:
					serve("application/json", manifest)(w, r)
				case "/api/agent/workflow":
					tt.h(w, r)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			var c Client
			res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/products", []Operation{{ID: "a", Action: "cart.state"}}, nil)
			require.Error(t, err)
			var we *Error
			assert.False(t, errors.As(err, &we))
			// The site answered: the caller learns what it said, and that
			// the batch may have run.
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, ErrProtocol)
			assert.ErrorContains(t, err, "may have run")
			require.NotNil(t, res)
			assert.Equal(t, pe.StatusCode, res.StatusCode)
			assert.Nil(t, res.Response)
			if strings.Contains(tt.name, "not in the batch") {
				assert.Contains(t, pe.Reason, "which is not in the batch")
				assert.NotContains(t, pe.Reason, "\a", "the id is quoted, control characters escaped")
			}
		})
	}
}

// TestResponsesFitTheTransportCap: whatever the handlers return, the
// response fits the 1 MiB transport cap, so the Go client can read it.
func TestResponsesFitTheTransportCap(t *testing.T) {
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("o%02d", i)
		}
		return out
	}
	str := func(size int) json.RawMessage { // a JSON string of exactly size bytes
		return json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
	}
	entry := func(id string) int { return len(`"":,`) + len(id) } // what a result adds besides itself
	tests := []struct {
		name    string
		ops     []string
		result  func(id string) (any, error)
		code    Code // "" means ok
		results int
	}{
		{"one result filling the budget", ids(1), func(id string) (any, error) {
			return str(DefaultMaxResultBytes - entry(id)), nil
		}, "", 1},
		{"one byte over the budget", ids(1), func(id string) (any, error) {
			return str(DefaultMaxResultBytes - entry(id) + 1), nil
		}, CodeResultTooLarge, 0},
		{"32 results filling the budget", ids(32), func(id string) (any, error) {
			return str(DefaultMaxResultBytes/32 - entry(id)), nil
		}, "", 32},
		{"a huge declared error message", ids(1), func(string) (any, error) {
			return nil, &Error{Status: 409, Code: "conflict", Message: strings.Repeat("m", 2*TransportLimitBytes)}
		}, CodeResultTooLarge, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := manifestWith(t, `"pacing":{"maxConcurrency":4}`, `{"r":{}}`)
			srv := httptest.NewUnstartedServer(nil)
			h, err := NewHandler(m, map[string]ActionHandler{"r": ActionFunc(func(_ context.Context, req *ActionRequest) (any, error) {
				return tt.result(req.Operation)
			})}, &HandlerOptions{Origin: "http://" + srv.Listener.Addr().String()})
			require.NoError(t, err)
			srv.Config.Handler = h
			srv.Start()
			defer srv.Close()
			var ops []Operation
			for _, id := range tt.ops {
				ops = append(ops, Operation{ID: id, Action: "r"})
			}
			var c Client
			res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/", ops, nil)
			if tt.code == "" {
				require.NoError(t, err)
			} else {
				var we *Error
				require.ErrorAs(t, err, &we, "the client read the response")
				assert.Equal(t, tt.code, we.Code)
			}
			require.NotNil(t, res)
			assert.Len(t, res.Response.Results, tt.results)
		})
	}
}

// TestClientReadsResultsAsRelayedData: results are the site's data, relayed
// as is. Operation ids are case-sensitive ("a" and "A" are two operations)
// and results may hold keys differing only in case; only the envelope's own
// members must be unambiguous.
func TestClientReadsResultsAsRelayedData(t *testing.T) {
	m := manifestWith(t, "", `{"r":{}}`)
	srv := httptest.NewUnstartedServer(nil)
	h, err := NewHandler(m, map[string]ActionHandler{"r": ActionFunc(func(_ context.Context, req *ActionRequest) (any, error) {
		return json.RawMessage(`{"id":"` + req.Operation + `","ID":2}`), nil
	})}, &HandlerOptions{Origin: "http://" + srv.Listener.Addr().String()})
	require.NoError(t, err)
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	var c Client
	res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/", []Operation{{ID: "a", Action: "r"}, {ID: "A", Action: "r"}}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"a","ID":2}`, string(res.Response.Results["a"]))
	assert.JSONEq(t, `{"id":"A","ID":2}`, string(res.Response.Results["A"]))
}

// outcome returns the Discovery of a Discover call, the usable one (a nil
// error) or the one inside the *DiscoveryError, and checks the contract
// between them: a nil error means a found manifest, anything else is an
// error carrying the Discovery.
func outcome(t *testing.T, d *Discovery, err error) *Discovery {
	t.Helper()
	if err == nil {
		require.NotNil(t, d)
		require.Equal(t, DiscoveryFound, d.Status)
		require.NotNil(t, d.Manifest, "a nil error means a usable manifest")
		require.NotEmpty(t, d.Endpoint)
		return d
	}
	require.Nil(t, d, "%v", err)
	var de *DiscoveryError
	require.ErrorAs(t, err, &de)
	assert.ErrorIs(t, err, ErrNotAvailable)
	assert.NotEqual(t, DiscoveryFound, de.Discovery.Status)
	assert.NotEqual(t, DiscoveryUnknown, de.Discovery.Status)
	if de.Discovery.Err != nil {
		assert.ErrorIs(t, err, de.Discovery.Err)
	}
	return de.Discovery
}
