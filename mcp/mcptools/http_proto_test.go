package mcptools

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawHTTP is an HTTP MCP server spoken to request by request.
type rawHTTP struct {
	t       *testing.T
	url     string
	client  *http.Client
	session string
	version string
}

func newRawHTTP(t *testing.T, opts *HTTPOptions) *rawHTTP {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return newRawHTTPServer(t, server, opts)
}

// newRawHTTPServer is newRawHTTP for server.
func newRawHTTPServer(t *testing.T, server *mcp.Server, opts *HTTPOptions) *rawHTTP {
	t.Helper()
	h, err := NewHTTPHandler(server, "tok", opts)
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawHTTP{t: t, url: ts.URL + "/", client: &http.Client{Transport: tr}}
}

func (c *rawHTTP) do(method, body string, header map[string]string) *http.Response {
	c.t.Helper()
	ctx := c.t.Context()
	if method == "DELETE" {
		ctx = context.Background() // in a cleanup, after the test's context ended
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// initialize opens a session at version.
func (c *rawHTTP) initialize(version string) {
	c.t.Helper()
	resp := c.do("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	io.Copy(io.Discard, resp.Body)
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	c.session, c.version = resp.Header.Get("Mcp-Session-Id"), version
	session := c.session
	c.t.Cleanup(func() { // the session's goroutines end with it
		c.session = session
		c.do("DELETE", "", nil)
	})
	resp = c.do("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	require.Equal(c.t, http.StatusAccepted, resp.StatusCode)
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, data string }

// readEvents reads the events of an SSE body until it ends.
func readEvents(t *testing.T, body io.Reader) []sseEvent {
	t.Helper()
	var events []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				events = append(events, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if ev != (sseEvent{}) {
		events = append(events, ev)
	}
	return events
}

// TestHTTPErrorsAreJSONRPC: what the SDK's handler refuses with a plain-text
// 400 (an unknown method, a request without its params, an unknown
// notification, a body that is not JSON) is a JSON-RPC error, with the
// request's id when there is one, and the same status.
func TestHTTPErrorsAreJSONRPC(t *testing.T) {
	c := newRawHTTP(t, nil)
	c.initialize("2025-06-18")
	cases := []struct {
		body string
		id   any
		code float64
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"no/such/method","params":{}}`, float64(7), -32601},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/call"}`, "x", -32602},
		{`{"jsonrpc":"2.0","method":"notifications/no-such-thing"}`, nil, -32601},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/list"`, nil, -32700},
		{`{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`, float64(9), -32600},
	}
	for _, tc := range cases {
		resp := c.do("POST", tc.body, nil)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.body)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), tc.body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), "%s: %s", tc.body, body)
		assert.Equal(t, "2.0", m["jsonrpc"])
		id, present := m["id"]
		assert.True(t, present, "%s: the id is present", tc.body)
		assert.Equal(t, tc.id, id, tc.body)
		e := m["error"].(map[string]any)
		assert.Equal(t, tc.code, e["code"], "%s: %s", tc.body, body)
		assert.NotEmpty(t, e["message"])
	}
	// An unknown session too.
	c.session = "nope"
	resp := c.do("POST", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil)
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), `"id":3`)
	assert.Contains(t, string(body), `"code":-32600`)
}

// TestHTTPResumeStream: a client whose event stream broke resumes it with
// Last-Event-ID and gets the events it missed.
func TestHTTPResumeStream(t *testing.T) {
	c := newRawHTTP(t, nil)
	c.initialize("2025-11-25")
	resp := c.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noop","arguments":{}}}`, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	events := readEvents(t, resp.Body)
	require.NotEmpty(t, events)
	first := events[0]
	require.NotEmpty(t, first.id, "events carry ids: %v", events)
	var last sseEvent
	for _, ev := range events {
		if strings.Contains(ev.data, `"id":2`) {
			last = ev
		}
	}
	require.NotEmpty(t, last.data, "the response is in the stream: %v", events)

	// Resuming after the first event replays the response.
	resp = c.do("GET", "", map[string]string{"Last-Event-ID": first.id, "Accept": "text/event-stream"})
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	replayed := readEvents(t, strings.NewReader(string(body)))
	var found bool
	for _, ev := range replayed {
		found = found || ev.data == last.data
	}
	assert.True(t, found, "replayed %v, want %q", replayed, last.data)
}

// TestHTTPProtocol20260728: a client at 2026-07-28 (sessionless, SEP-2575)
// is served over HTTP too: the go-sdk's client negotiates it and calls a
// tool; an older client still gets a session.
func TestHTTPProtocol20260728(t *testing.T) {
	c := newRawHTTP(t, nil)
	for _, version := range []string{"", "2025-11-25"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
			Endpoint: c.url, HTTPClient: &http.Client{Transport: bearer{"tok", c.client.Transport}},
		}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		want := version
		if want == "" {
			want = "2026-07-28"
		}
		assert.Equal(t, want, cs.InitializeResult().ProtocolVersion)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "noop", Arguments: map[string]any{}})
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Content[0].(*mcp.TextContent).Text)
		require.NoError(t, cs.Close())
	}
}

// bearer adds a bearer token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestHTTPNegativeLimitsAreDefaults: a negative bound is the default, not
// "no limit" nor "nothing fits": a request is served, and a body over the
// default limit is refused.
func TestHTTPNegativeLimitsAreDefaults(t *testing.T) {
	c := newRawHTTP(t, &HTTPOptions{MaxRequestBodyBytes: -1, SessionTimeout: -1, MaxEventStoreBytes: -1})
	c.initialize("2025-06-18")
	resp := c.do("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
	io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	big := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", DefaultMaxRequestBodyBytes) + `"}}`
	resp = c.do("POST", big, nil)
	io.Copy(io.Discard, resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}
