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
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClientTimeoutsAgainstATarpit(t *testing.T) {
	srv := tarpit(t)
	c := &Client{DiscoverTimeout: 300 * time.Millisecond, CheckTimeout: 300 * time.Millisecond, RunTimeout: 300 * time.Millisecond}

	d, err := c.Discover(context.Background(), srv.URL+"/")
	require.NoError(t, err, "a site that does not answer is a status, not an error")
	assert.Equal(t, DiscoveryUnavailable, d.Status)
	assert.ErrorIs(t, d.Err, context.DeadlineExceeded)
	assert.ErrorContains(t, d.Err, "did not answer within 300ms")

	rep, err := c.Check(context.Background(), srv.URL+"/")
	require.NoError(t, err)
	assert.False(t, rep.Valid)
	require.NotEmpty(t, rep.Problems)
	assert.Contains(t, rep.Problems[0].Message, "did not answer within 300ms")

	_, err = c.Run(context.Background(), srv.URL+"/", []Operation{{ID: "a", Action: "a"}}, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "did not answer within 300ms")
}

// TestClientTimeoutOfTheBatch: a site whose documents answer but whose
// endpoint trickles is cut at the Run timeout.
func TestClientTimeoutOfTheBatch(t *testing.T) {
	srv := endpointSite(t, doc(okWorkflow, `{"a":{}}`), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	c := &Client{RunTimeout: 300 * time.Millisecond}
	_, err := c.Run(context.Background(), srv.URL+"/", []Operation{{ID: "a", Action: "a", Input: json.RawMessage(`{}`)}}, nil)
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
		require.NoError(t, err)
		assert.Equal(t, DiscoveryUnavailable, d.Status)
		assert.Equal(t, DefaultDiscoverTimeout, time.Since(start))

		start = time.Now()
		_, err = c.Check(context.Background(), "http://site.test/")
		require.NoError(t, err)
		assert.Equal(t, DefaultCheckTimeout, time.Since(start))

		start = time.Now()
		_, err = c.Run(context.Background(), "http://site.test/", nil, nil)
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
