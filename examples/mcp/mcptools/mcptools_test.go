package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callerFunc adapts a function to agentproto.Caller.
type callerFunc func(ctx context.Context, typ string, payload any, result any) error

func (f callerFunc) Call(ctx context.Context, typ string, payload any, result any) error {
	return f(ctx, typ, payload, result)
}

// connect runs server on the SDK's in-memory transports and returns a client
// session.
func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// TestBridgeCallContext: the bridge call runs with the MCP request's context,
// so the client's cancellation reaches it.
func TestBridgeCallContext(t *testing.T) {
	entered := make(chan struct{})
	seen := make(chan error, 1)
	caller := callerFunc(func(ctx context.Context, typ string, _ any, _ any) error {
		close(entered)
		<-ctx.Done()
		seen <- ctx.Err()
		return ctx.Err()
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	cs := connect(t, server)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: agentproto.ToolSnapshot, Arguments: map[string]any{}})
		done <- err
	}()
	<-entered
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge call's context was not cancelled")
	}
}

// TestBridgeErrorText: a bridge error is a tool result with the bridge's
// message, unchanged.
func TestBridgeErrorText(t *testing.T) {
	caller := callerFunc(func(context.Context, string, any, any) error {
		return &agentproto.RemoteError{Message: agentproto.MsgExtensionOffline}
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	cs := connect(t, server)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: agentproto.ToolScreenshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Equal(t, agentproto.MsgExtensionOffline, res.Content[0].(*mcp.TextContent).Text)
}

// filter runs the stdio line filter over input and returns what it passed on
// and what it answered.
func filter(input string, limit int) (passed, answered string) {
	var out bytes.Buffer
	got, _ := io.ReadAll(&lineFilter{r: bufio.NewReaderSize(strings.NewReader(input), 16), out: &out, limit: limit})
	return string(got), out.String()
}

func TestFilterLines(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	passed, answered := filter(good+"\n\n  \nnope\n"+good+"\r\n"+strings.Repeat("x", 100)+"\n[1]\n"+good, 64)
	assert.Equal(t, good+"\n"+good+"\n"+good+"\n", passed, "valid lines pass, the last one without its newline too")
	assert.Equal(t, parseErrorLine+tooLongLine+batchRefusedLine, answered)

	// A long line is refused whole, even when it spans reads.
	passed, answered = filter(strings.Repeat(`{"a":1}`, 10000)+"\n"+good+"\n", 1000)
	assert.Equal(t, good+"\n", passed)
	assert.Equal(t, tooLongLine, answered)
}

func FuzzFilterLines(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	f.Add("garbage\n{}\n[]\n")
	f.Add(`{"jsonrpc":"2.0","id":null,"result":{}}`)
	f.Fuzz(func(t *testing.T, input string) {
		passed, answered := filter(input, 256)
		for line := range strings.Lines(passed) {
			line = strings.TrimSuffix(line, "\n")
			_, err := jsonrpc.DecodeMessage([]byte(line))
			require.NoError(t, err, "passed a line that is not one JSON-RPC message: %q", line)
			require.LessOrEqual(t, len(line), 257)
		}
		for line := range strings.Lines(answered) {
			var reply struct {
				ID    json.RawMessage `json:"id"`
				Error struct{ Code int }
			}
			require.NoError(t, json.Unmarshal([]byte(line), &reply))
			require.Equal(t, "null", string(reply.ID))
			require.Contains(t, []int{-32700, -32600}, reply.Error.Code)
		}
	})
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost": true, "LOCALHOST:1": true, "[::1]:9": true, "127.1.2.3": true,
		"evil.example": false, "0.0.0.0:80": false, "": false, "localhost.evil.example": false, "[::ffff:127.0.0.1]:1": true,
	} {
		assert.Equal(t, want, loopbackHost(host), host)
	}
}

func TestNewHTTPHandlerNeedsToken(t *testing.T) {
	_, err := NewHTTPHandler(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), &HTTPOptions{})
	assert.True(t, errors.Is(err, ErrNoToken))
}
