package mcptools

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Served by httpapi.NewServer, a request with the bearer token does
// not count against the server's bound on connections without one: a
// client's open event stream survives a flood of tokenless connections
// (each answered 401 and never read), which evict one another (issue 21
// item 1).
func TestHTTPAuthenticatedStreamSurvivesTokenlessConnections(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	h, err := NewHTTPHandler(server, "tok", nil)
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = httpapi.NewServer(h, &httpapi.ServerOptions{MaxUnauthConns: 1})
	ts.Start()
	defer ts.Close()
	url := ts.URL + "/"
	client := &http.Client{Transport: &http.Transport{}}
	post := func(session, body string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	stream, err := client.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)

	for range 8 {
		nc, err := net.Dial("tcp", ts.Listener.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		_, err = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		require.NoError(t, err)
		// Answered (401): the connection has been served, and is never
		// read further.
		_, err = nc.Read(make([]byte, 1))
		require.NoError(t, err)
	}

	// The stream is still open: a notification reaches it.
	mcp.AddTool(server, &mcp.Tool{Name: "late"}, func(ctx context.Context, r *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	})
	sc := bufio.NewScanner(stream.Body)
	found := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "notifications/tools/list_changed") {
			found = true
			break
		}
	}
	assert.True(t, found, "the authenticated stream was closed: %v", sc.Err())

	// End the session, so that its goroutines end.
	req, err = http.NewRequestWithContext(t.Context(), "DELETE", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err = client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
}
