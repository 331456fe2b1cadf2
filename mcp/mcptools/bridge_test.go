package mcptools

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelled is a context that has ended: a dial with it names its path and
// connects to nothing, whatever listens there.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// TestBridgeDialerReadsNoEnvironment: a zero BridgeDialer dials the
// platform's path whatever WEBOPERATOR_AGENT_SOCKET says, and sends no
// token; NewBridgeDialerFromEnv reads both variables with the getenv given.
func TestBridgeDialerReadsNoEnvironment(t *testing.T) {
	envPath := filepath.Join(t.TempDir(), "env.sock")
	t.Setenv(agentproto.EnvSocket, envPath)
	t.Setenv(agentproto.EnvToken, "from-the-environment")

	var zero BridgeDialer
	err := zero.Call(cancelled(t), agentproto.TypeSnapshot, nil, nil)
	require.ErrorIs(t, err, ErrBridgeUnreachable)
	assert.Contains(t, err.Error(), "not reachable at "+agentproto.PlatformSocketPath()+":")
	assert.NotContains(t, err.Error(), envPath)

	given := filepath.Join(t.TempDir(), "given.sock")
	vars := map[string]string{agentproto.EnvSocket: given, agentproto.EnvToken: "tok"}
	d := NewBridgeDialerFromEnv(func(k string) string { return vars[k] })
	assert.Equal(t, given, d.Path)
	require.NotNil(t, d.Options)
	assert.Equal(t, "tok", d.Options.Token)
	err = d.Call(cancelled(t), agentproto.TypeSnapshot, nil, nil)
	require.ErrorIs(t, err, ErrBridgeUnreachable)
	assert.Contains(t, err.Error(), "not reachable at "+given+":")
}

// TestBridgeUnreachableText: the sentinel's text has the package prefix
// for Go callers; the model reads the same without it, and middleware gets
// the error itself.
func TestBridgeUnreachableText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.sock")
	d := &BridgeDialer{Path: path}
	defer d.Close()
	err := d.Call(t.Context(), agentproto.TypeSnapshot, nil, nil)
	require.ErrorIs(t, err, ErrBridgeUnreachable)
	assert.True(t, strings.HasPrefix(err.Error(), "mcptools: the WebOperator bridge socket is not reachable at "+path+": "), err.Error())

	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	seen := toolErrors(server)
	AddBridgeTools(server, d)
	res, err := connect(t, server).CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserSnapshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.True(t, strings.HasPrefix(text, "the WebOperator bridge socket is not reachable at "+path+": "), text)
	assert.True(t, errors.Is(*seen, ErrBridgeUnreachable), "%v", *seen)
}

// TestSentinelsArePrefixed: every sentinel says where it comes from.
func TestSentinelsArePrefixed(t *testing.T) {
	for _, err := range []error{ErrBridgeUnreachable, ErrApprovalDenied, ErrApprovalUnavailable, ErrNoToken} {
		assert.True(t, strings.HasPrefix(err.Error(), errPrefix), err.Error())
	}
	wrapped := toolError{ErrApprovalDenied}
	assert.Equal(t, "the user did not approve this tool call", wrapped.Error())
	assert.ErrorIs(t, wrapped, ErrApprovalDenied)
}

// TestApprovalUnavailableText: a hub tool that needs approval, called by a
// client without elicitation, tells the model why without the package
// prefix, and middleware matches the sentinel.
func TestApprovalUnavailableText(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	seen := toolErrors(server)
	hub := &fakeHub{}
	AddHubTools(server, hub, &HubToolsOptions{NeedsApproval: func(string) bool { return true }})
	res, err := connect(t, server).CallTool(t.Context(), &mcp.CallToolParams{Name: ToolHubClick, Arguments: map[string]any{"selector": "#buy"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "this tool call needs the user's approval, and the MCP client does not support elicitation", res.Content[0].(*mcp.TextContent).Text)
	assert.ErrorIs(t, *seen, ErrApprovalUnavailable)
	assert.Empty(t, hub.calls, "refused before the hub is used")
}

// toolErrors records, in what it returns, the error of the last tool result
// of server, as a server's own middleware sees it.
func toolErrors(server *mcp.Server) *error {
	var seen error
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.CallToolResult); ok {
				seen = r.GetError()
			}
			return res, err
		}
	})
	return &seen
}
