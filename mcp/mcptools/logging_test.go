package mcptools

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientLogHandler: the server's log records reach each client as
// notifications/message at or above the level the client set, and none
// before it sets one.
func TestClientLogHandler(t *testing.T) {
	h := NewClientLogHandler(nil)
	defer h.Close()
	logger := slog.New(h).With("source", "test")
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"},
		//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}}})
	h.Attach(server)
	calls := 0
	server.AddTool(&mcp.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls++
			logger.Info("an info record")
			logger.WithGroup("g").Warn("bridge connection lost", "socket", "/tmp/s", "call", calls)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	cs, got := logClient(t, server)

	// No level set: nothing is sent; then a warning level.
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "log", Arguments: map[string]any{}})
	require.NoError(t, err)
	h.sent()
	//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "warning"}))
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "log", Arguments: map[string]any{}})
	require.NoError(t, err)
	select {
	case p := <-got:
		//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
		assert.Equal(t, mcp.LoggingLevel("warning"), p.Level)
		data, _ := json.Marshal(p.Data)
		assert.JSONEq(t, `{"msg":"bridge connection lost","source":"test","g.socket":"/tmp/s","g.call":"2"}`, string(data))
	case <-time.After(30 * time.Second):
		t.Fatal("no log notification")
	}
	// The first one received is the second call's: the first call's
	// were logged before the client set a level, the info one is below
	// it.
}

// TestClientLogHandlerZero: a zero ClientLogHandler sends nothing and does
// not panic as a handler; Attach says what it needs instead of a nil
// dereference.
func TestClientLogHandlerZero(t *testing.T) {
	var h ClientLogHandler
	logger := slog.New(&h).With("a", 1).WithGroup("g")
	assert.False(t, h.Enabled(t.Context(), slog.LevelError))
	assert.NotPanics(t, func() { logger.Error("dropped", "b", 2) })
	assert.NoError(t, h.Handle(t.Context(), slog.NewRecord(time.Time{}, slog.LevelError, "dropped", 0)))
	assert.NoError(t, h.Close())
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	assert.PanicsWithValue(t, "mcptools: ClientLogHandler.Attach on a handler not made by NewClientLogHandler", func() { h.Attach(server) })
}

// TestClientLogHandlerAttach: records logged before Attach are not sent
// (no session could have them), those after are; Attach(nil) stops.
func TestClientLogHandlerAttach(t *testing.T) {
	h := NewClientLogHandler(nil)
	defer h.Close()
	logger := slog.New(h)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"},
		//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	cs, got := logClient(t, server)
	//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
	require.NoError(t, cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}))

	logger.Info("before attach")
	h.sent()
	h.Attach(server)
	logger.Info("after attach")
	h.sent()
	h.Attach(nil)
	logger.Info("after detach")
	h.sent()
	h.Attach(server)
	logger.Info("attached again")
	h.sent()
	var msgs []string
	for len(msgs) < 2 {
		select {
		case p := <-got:
			msgs = append(msgs, p.Data.(map[string]any)["msg"].(string))
		case <-time.After(30 * time.Second):
			t.Fatal("no log notification")
		}
	}
	assert.Equal(t, []string{"after attach", "attached again"}, msgs)
}

// logClient connects a client to server and returns it with the log
// notifications it receives; the session ends with the test.
//
//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
func logClient(t *testing.T, server *mcp.Server) (*mcp.ClientSession, <-chan *mcp.LoggingMessageParams) {
	t.Helper()
	//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
	got := make(chan *mcp.LoggingMessageParams, 10)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { got <- r.Params },
	}).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, got
}
