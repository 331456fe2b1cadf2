package mcptools

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTTPCancelledCallGetsNoResponse: a client cancels a call over
// streamable HTTP with notifications/cancelled while keeping the call's POST
// open; the tool's context ends, and the POST's stream ends without a
// response, as MCP says (before: the SDK wrote the tool's result on it). An
// uncancelled call on the session is answered.
func TestHTTPCancelledCallGetsNoResponse(t *testing.T) {
	started := make(chan struct{}, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			// A tool that answers its cancellation, as ours do.
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cancelled"}}, IsError: true}, nil
		})
	server.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	c := newRawHTTPServer(t, server, nil)
	c.initialize("2025-11-25")

	call := c.do("POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`, nil)
	require.Equal(t, http.StatusOK, call.StatusCode)
	<-started
	resp := c.do("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`, nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	for _, ev := range readEvents(t, call.Body) { // the stream ends
		assert.NotContains(t, ev.data, `"id":7`, "the cancelled call got a response")
	}

	// A cancellation of an answered call, or of one never made, changes
	// nothing.
	resp = c.do("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`, nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	resp = c.do("POST", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"noop","arguments":{}}}`, nil)
	var answered bool
	for _, ev := range readEvents(t, resp.Body) {
		answered = answered || strings.Contains(ev.data, `"id":8,"result"`)
	}
	assert.True(t, answered, "the call after the cancellation was answered")
}

// TestHTTPCancelledHubCommand: a client cancels hub_navigate while the
// extension holds the browser command; the hub's command returns with the
// call's context (the call's stream ends while the extension still holds
// the command, so nothing waits for its answer) and the call gets no
// response (before: the cancellation error was answered).
func TestHTTPCancelledHubCommand(t *testing.T) {
	hub, err := extbridge.NewHub("mcptools-test-hub-token", nil)
	require.NoError(t, err)
	t.Cleanup(func() { hub.Close() })
	held, release := make(chan string, 1), make(chan struct{})
	browser := extbridgetest.NewBrowser()
	ext, err := extbridgetest.Connect(t.Context(), hub, &extbridgetest.Options{Token: "mcptools-test-hub-token",
		Browser: extbridgetest.BrowserHandlerFunc(func(ctx context.Context, cmd *extbridgetest.Command) *extbridgetest.Result {
			held <- cmd.Action
			<-release
			return browser.HandleCommand(ctx, cmd)
		})})
	require.NoError(t, err)
	t.Cleanup(func() { ext.Close() })
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)

	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddHubTools(server, hub, nil)
	c := newRawHTTPServer(t, server, nil)
	c.initialize("2025-11-25")
	call := c.do("POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+ToolHubNavigate+`","arguments":{"url":"https://shop.example/"}}}`, nil)
	require.Equal(t, http.StatusOK, call.StatusCode)
	require.Equal(t, "navigate", <-held)
	resp := c.do("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, nil)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	for _, ev := range readEvents(t, call.Body) { // ends with the hub's command
		assert.NotContains(t, ev.data, `"id":7`, "the cancelled call got a response")
	}
	releaseOnce() // the late answer finds no command waiting
}
