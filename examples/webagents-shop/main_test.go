package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// served is one running site and what it answered.
type served struct {
	origin   string
	markdown string
	json     string
	pageHdr  http.Header
	state    json.RawMessage
	replayed string // Idempotent-Replayed of a lost keyed sign-in's retry
}

// visit reads the discovery documents and a page, and runs a sign-up, an
// add and a cart check as an agent.
func visit(t *testing.T, origin string) served {
	t.Helper()
	s := served{origin: origin}
	get := func(path string) (string, http.Header) {
		resp, err := http.Get(origin + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return string(body), resp.Header
	}
	s.markdown, _ = get(webagents.MarkdownPath)
	s.json, _ = get(webagents.WellKnownPath)
	_, s.pageHdr = get("/products/kbd-75")
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &webagents.Client{HTTPClient: &http.Client{Jar: jar}}
	res, err := c.DiscoverAndRun(t.Context(), origin+"/products/kbd-75", []webagents.Operation{
		{ID: "up", Action: "account.signUp", Input: json.RawMessage(`{"email":"a@example.com","password":"password1"}`)},
		{ID: "find", Action: "catalog.search", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"},"quantity":2}`), DependsOn: []string{"up"}},
		{ID: "state", Action: "cart.state", DependsOn: []string{"add"}},
	}, &webagents.RunOptions{AllowWrites: true})
	require.NoError(t, err)
	s.state = res.Response.Results["state"]

	// A keyed sign-in sent with a visitor's cookie, whose answer is lost:
	// the retry carries the cookie the sign-in replaced, and is a replay.
	visitor, err := cookiejar.New(nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Jar: visitor}).Get(origin + "/")
	require.NoError(t, err)
	resp.Body.Close()
	u, err := url.Parse(origin)
	require.NoError(t, err)
	cookies := visitor.Cookies(u)
	require.Len(t, cookies, 1)
	body := `{"version":"0.1","operations":[{"id":"in","action":"account.signIn","input":{"email":"a@example.com","password":"password1"}}]}`
	for range 2 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, origin+"/api/agent/workflow", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "sign-in-1")
		req.AddCookie(cookies[0])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		s.replayed = resp.Header.Get("Idempotent-Replayed")
	}
	return s
}

// TestExampleServesTheSameSiteAsTheHarness: the demo and the tests run the
// shop in-process with shop.Serve, which repeats this example's wiring.
// Both must serve the same site: the same documents, page headers and
// agent results, and both shut down cleanly.
func TestExampleServesTheSameSiteAsTheHarness(t *testing.T) {
	start := func(serve func(ctx context.Context, ln net.Listener) error) (string, func()) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- serve(ctx, ln) }()
		return "http://" + ln.Addr().String(), func() {
			cancel()
			assert.NoError(t, <-done)
		}
	}
	exampleOrigin, stopExample := start(func(ctx context.Context, ln net.Listener) error {
		return run(ctx, ln, "", slog.New(slog.DiscardHandler))
	})
	defer stopExample()
	harnessOrigin, stopHarness := start(func(ctx context.Context, ln net.Listener) error {
		return shop.Serve(ctx, ln, nil)
	})
	defer stopHarness()

	example, harness := visit(t, exampleOrigin), visit(t, harnessOrigin)
	assert.Equal(t, harness.markdown, example.markdown)
	assert.Equal(t, harness.json, example.json)
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy"} {
		assert.NotEmpty(t, example.pageHdr.Get(h), h)
		assert.Equal(t, harness.pageHdr.Get(h), example.pageHdr.Get(h), h)
	}
	assert.JSONEq(t, string(harness.state), string(example.state))
	assert.Contains(t, string(example.state), `"quantity":2`)
	assert.Equal(t, "true", example.replayed, "the retry of a keyed sign-in is a replay")
	assert.Equal(t, harness.replayed, example.replayed)
}
