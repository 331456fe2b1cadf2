package webagents

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarpit answers every request with a 200 and then one byte of body every
// 100 ms until the client goes away.
func tarpit(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		trickle(w, r, 'x', 100*time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// trickle answers 200 and then writes b every interval until the client
// goes away.
func trickle(w http.ResponseWriter, r *http.Request, b byte, interval time.Duration) {
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := w.Write([]byte{b}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(interval):
		}
	}
}

func TestClientTimeoutsAgainstATarpit(t *testing.T) {
	srv := tarpit(t)
	c := &Client{DiscoverTimeout: 300 * time.Millisecond, CheckTimeout: 300 * time.Millisecond, RunTimeout: 300 * time.Millisecond}

	d, err := c.Discover(context.Background(), srv.URL+"/")
	d = outcome(t, d, err)
	assert.Equal(t, DiscoveryUnavailable, d.Status)
	assert.ErrorIs(t, d.Err, context.DeadlineExceeded)
	assert.EqualError(t, d.Err, "webagents: timed out: the site did not answer within 300ms", "it says that it timed out")

	rep, err := c.Check(context.Background(), srv.URL+"/")
	require.NoError(t, err)
	assert.False(t, rep.Valid)
	require.NotEmpty(t, rep.Problems)
	assert.Contains(t, rep.Problems[0].Message, "timed out: the site did not answer within 300ms")

	_, err = c.DiscoverAndRun(context.Background(), srv.URL+"/", []Operation{{ID: "a", Action: "a"}}, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "timed out: the site did not answer within 300ms")
}

// TestClientTimeoutOfTheBatch: a site whose documents answer but whose
// endpoint trickles is cut at the Run timeout.
func TestClientTimeoutOfTheBatch(t *testing.T) {
	srv := endpointSite(t, doc(okWorkflow, `{"a":{}}`), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		trickle(w, r, ' ', 50*time.Millisecond)
	})
	c := &Client{RunTimeout: 300 * time.Millisecond}
	_, err := c.DiscoverAndRun(context.Background(), srv.URL+"/", []Operation{{ID: "a", Action: "a", Input: json.RawMessage(`{}`)}}, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not answer within 300ms")
}

// endpointSite serves manifest at /webagents.md and answers its endpoint
// /api/agent/workflow with endpoint.
func endpointSite(t *testing.T, manifest string, endpoint http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case MarkdownPath:
			serve("text/markdown; charset=utf-8", "```webagents\n"+manifest+"\n```\n")(w, r)
		case "/api/agent/workflow":
			endpoint(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hangingTransport answers no request until its context ends.
type hangingTransport struct{}

func (hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestClientDefaultTimeouts: with a zero Client and a context without a
// deadline, each call ends at its documented default.
func TestClientDefaultTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Client{HTTPClient: &http.Client{Transport: hangingTransport{}}}
		start := time.Now()
		d, err := c.Discover(context.Background(), "http://site.test/")
		d = outcome(t, d, err)
		assert.Equal(t, DiscoveryUnavailable, d.Status)
		assert.ErrorIs(t, d.Err, context.DeadlineExceeded)
		assert.EqualError(t, d.Err, "webagents: timed out: the site did not answer within 10s")
		assert.Equal(t, DefaultDiscoverTimeout, time.Since(start))

		start = time.Now()
		_, err = c.Check(context.Background(), "http://site.test/")
		require.NoError(t, err)
		assert.Equal(t, DefaultCheckTimeout, time.Since(start))

		start = time.Now()
		_, err = c.DiscoverAndRun(context.Background(), "http://site.test/", nil, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, DefaultRunTimeout, time.Since(start))

		// A caller's deadline wins; a negative timeout means none.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start = time.Now()
		_, err = c.Discover(ctx, "http://site.test/")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Minute, time.Since(start))

		c.DiscoverTimeout = -1
		ctx, cancel = context.WithCancel(context.Background())
		go func() { time.Sleep(time.Hour); cancel() }()
		start = time.Now()
		_, err = c.Discover(ctx, "http://site.test/")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, time.Hour, time.Since(start))
	})
}

// TestClientReadsNonEnvelopes: issue 12 item 2. A site that applied the
// batch but answers without the envelope still tells the caller so.
func TestClientReadsNonEnvelopes(t *testing.T) {
	manifest := doc(okWorkflow, `{"add":{"effect":"write"},"state":{}}`)
	ops := []Operation{{ID: "a1", Action: "add"}, {ID: "s", Action: "state"}}
	tests := []struct {
		name     string
		status   int
		ctype    string
		body     string
		results  map[string]string // lenient reading; nil means a *ProtocolError
		okResult bool
	}{
		{"results keyed by id", 200, "application/json", `{"ok":true,"results":{"a1":{"n":1},"s":[1]}}`,
			map[string]string{"a1": `{"n":1}`, "s": `[1]`}, true},
		{"results listed by id", 200, "application/json", `{"ok":true,"results":[{"id":"a1","result":1},{"id":"s","result":{"items":[]}}]}`,
			map[string]string{"a1": `1`, "s": `{"items":[]}`}, true},
		// The Node bench site (kowo-co/betterwright-bench) lists each
		// operation with its action and "output" (issue 24 item 2).
		{"results listed with their action and output", 200, "application/json; charset=utf-8",
			`{"ok":true,"results":[{"id":"a1","action":"add","output":{"ok":true}},{"id":"s","action":"state","output":{"product":null}}]}`,
			map[string]string{"a1": `{"ok":true}`, "s": `{"product":null}`}, true},
		{"listed output without an action", 200, "application/json", `{"ok":true,"results":[{"id":"s","output":3}]}`,
			map[string]string{"s": `3`}, true},
		{"listed output of another action", 200, "application/json", `{"ok":true,"results":[{"id":"s","action":"add","output":3}]}`, nil, false},
		{"listed action not a string", 200, "application/json", `{"ok":true,"results":[{"id":"s","action":["state"],"output":3}]}`, nil, false},
		{"listed result and output both", 200, "application/json", `{"ok":true,"results":[{"id":"s","result":1,"output":2}]}`, nil, false},
		{"listed with neither result nor output", 200, "application/json", `{"ok":true,"results":[{"id":"s","action":"state"}]}`, nil, false},
		{"listed output for an operation not sent", 200, "application/json", `{"ok":true,"results":[{"id":"zz","action":"state","output":1}]}`, nil, false},
		{"listed output twice", 200, "application/json", `{"ok":true,"results":[{"id":"s","output":1},{"id":"s","output":1}]}`, nil, false},
		{"listed id not a string", 200, "application/json", `{"ok":true,"results":[{"id":1,"output":1}]}`, nil, false},
		{"only some named: none guessed", 200, "application/json", `{"ok":true,"results":{"s":2}}`,
			map[string]string{"s": `2`}, true},
		{"failure read leniently", 200, "application/json", `{"ok":false,"error":"Sign in first.","code":"unauthorized","results":{}}`,
			map[string]string{}, false},
		{"results as a bare list", 200, "application/json", `{"ok":true,"results":[1,2]}`, nil, false},
		{"a result for an operation not sent", 200, "application/json", `{"ok":true,"results":{"zz":1}}`, nil, false},
		{"listed twice", 200, "application/json", `{"ok":true,"results":[{"id":"s","result":1},{"id":"s","result":2}]}`, nil, false},
		{"ok not a boolean", 200, "application/json", `{"ok":"yes","results":{}}`, nil, false},
		{"success naming nothing", 200, "application/json", `{"ok":true}`, nil, false},
		{"non-2xx never lenient", 500, "application/json", `{"ok":true,"results":{"s":1}}`, nil, false},
		{"non-JSON never lenient", 200, "text/plain", `{"ok":true,"results":{"s":1}}`, nil, false},
		{"other protocol", 200, "application/json", `{"ok":true,"protocol":"webagents/9","results":{"s":1}}`, nil, false},
		{"duplicate keys", 200, "application/json", `{"ok":false,"ok":true,"results":{"s":1}}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := endpointSite(t, manifest, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			var c Client
			res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/", ops, &RunOptions{AllowWrites: true})
			require.NotNil(t, res)
			assert.Equal(t, tt.status, res.StatusCode)
			assert.Equal(t, tt.body, string(res.Body))
			if tt.results == nil {
				var pe *ProtocolError
				require.ErrorAs(t, err, &pe)
				assert.ErrorIs(t, err, ErrProtocol)
				assert.Equal(t, tt.status, pe.StatusCode)
				assert.Nil(t, res.Response)
				return
			}
			require.NotNil(t, res.Response)
			require.Len(t, res.Warnings, 1)
			assert.Contains(t, res.Warnings[0], "read leniently")
			assert.Len(t, res.Response.Results, len(tt.results))
			for id, want := range tt.results {
				assert.JSONEq(t, want, string(res.Response.Results[id]), id)
			}
			if tt.okResult {
				assert.NoError(t, err)
			} else {
				var we *Error
				require.ErrorAs(t, err, &we)
				assert.Equal(t, CodeUnauthorized, we.Code)
				assert.Equal(t, "Sign in first.", we.Message)
			}
		})
	}
}

// TestDiscoverNoActionsForThePage: issue 12 item 5. A manifest that
// publishes nothing for the page is not "found".
func TestDiscoverNoActionsForThePage(t *testing.T) {
	manifest := doc(okWorkflow, `{"a":{"pathPrefixes":["/shop"]},"b":{"pathPrefixes":["/shop/cart"]}}`)
	srv := endpointSite(t, manifest, nil)
	var c Client
	d, err := c.Discover(t.Context(), srv.URL+"/about")
	d = outcome(t, d, err)
	assert.Equal(t, DiscoveryNoActions, d.Status)
	assert.Equal(t, "no actions for this page", d.Status.String())
	assert.ErrorIs(t, d.Err, ErrNoActionsForPage)
	assert.NotNil(t, d.Manifest)
	assert.Empty(t, d.Actions)

	d, err = c.Discover(t.Context(), srv.URL+"/shop/x")
	d = outcome(t, d, err)
	assert.Equal(t, DiscoveryFound, d.Status)

	// An action published for other pages is out of scope, one never
	// published is "not published by this site".
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/shop/x", []Operation{{ID: "x", Action: "b"}}, nil)
	assert.ErrorIs(t, err, ErrNotInScope)
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/shop/x", []Operation{{ID: "x", Action: "zz"}}, nil)
	assert.ErrorIs(t, err, ErrNotPublished)

	// Issue 24 item 3: so on a page the site publishes nothing for, not
	// "not available on this page".
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/about", []Operation{{ID: "x", Action: "a"}}, nil)
	assert.ErrorIs(t, err, ErrNotInScope)
	assert.EqualError(t, err, `webagents: action not in scope for this page: operation "x", action "a"`)
	assert.NotErrorIs(t, err, ErrNotAvailable)
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/about", []Operation{{ID: "x", Action: "zz"}}, nil)
	assert.ErrorIs(t, err, ErrNotPublished)
	_, err = c.DiscoverAndRun(t.Context(), srv.URL+"/about", nil, nil)
	assert.ErrorIs(t, err, ErrNotAvailable, "no operation: the page has nothing")
	assert.ErrorIs(t, err, ErrNoActionsForPage)
}
