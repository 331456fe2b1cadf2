package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBridgeTextOfADeeplyNestedResult: a bridge tool's text is the
// result indented by agentproto's bounded printer. json.Indent wrote
// 2×999 spaces before each member of a result nested 999 levels deep:
// 200 MB of text for a 200 KB result.
func TestBridgeTextOfADeeplyNestedResult(t *testing.T) {
	const depth = 999
	deep := append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("0,"), 100_000)...)
	deep = append(deep[:len(deep)-1], bytes.Repeat([]byte("]"), depth)...)
	caller := callerFunc(func(_ context.Context, _ string, _ any, result any) error {
		*result.(*json.RawMessage) = deep
		return nil
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	cs := connect(t, server)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserSnapshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 1)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Less(t, len(text), 2*len(deep), "levels past 64 written compactly")
	assert.JSONEq(t, string(deep), text, "the same value")
}
