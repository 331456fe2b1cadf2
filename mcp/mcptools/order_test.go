package mcptools

import (
	"context"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeepToolOrder: tools/list lists the tools named to KeepToolOrder in
// the order named (the go-sdk lists by name), then the others by name.
func TestKeepToolOrder(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	for _, name := range []string{"zeta", "alpha"} { // not named: after, by name
		server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, noop)
	}
	AddBridgeTools(server, callerFunc(func(context.Context, string, any, any) error { return nil }))
	server.AddTool(&mcp.Tool{Name: "mine", InputSchema: map[string]any{"type": "object"}}, noop)
	KeepToolOrder(server, "mine")
	cs := connect(t, server)
	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var got []string
	for _, tool := range list.Tools {
		got = append(got, tool.Name)
	}
	var want []string
	for _, tool := range tools.List() {
		want = append(want, tool.Name)
	}
	assert.Equal(t, append(want, "mine", "alpha", "zeta"), got)
}
