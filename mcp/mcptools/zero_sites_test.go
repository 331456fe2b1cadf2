package mcptools

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSitesZeroValue: a zero Sites has no sites, as documented: its tools and
// resources are registered, webagents_status reports an empty list (valid
// against its output schema), and webagents_batch refuses every call, saying
// no site is configured; nothing panics.
func TestSitesZeroValue(t *testing.T) {
	var sites Sites
	assert.Empty(t, sites.Statuses())
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sites.AddTools(server)
	sites.AddResources(server)
	cs := connect(t, server)

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolWebAgentsStatus})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, `{"sites":[]}`, string(raw))

	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolWebAgentsBatch, Arguments: map[string]any{
		"site": "https://shop.example/", "operations": []any{map[string]any{"id": "a", "action": "catalog.search"}}}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "no WebAgents site is configured")

	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: SiteStatusURI})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sites":[]}`, read.Contents[0].Text)
}
