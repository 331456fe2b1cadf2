package mcptools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/webagents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSiteStatusSkipped: an action that cannot become a tool is a
// SkippedAction, its name and the reason apart, in Statuses, in
// webagents_status's structured result (valid against the tool's output
// schema, which the client checks) and in the status resource.
func TestSiteStatusSkipped(t *testing.T) {
	echo := webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) { return "ok", nil })
	page := startSite(t, `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},"actions":{
		"a:b":{"description":"One.","effect":"read"},
		"a_b":{"description":"Two.","effect":"read"},
		"list":{"description":"Three.","effect":"read","inputSchema":{"type":"array"}}}}`,
		map[string]webagents.ActionHandler{"a:b": echo, "a_b": echo, "list": echo}, nil)
	sites := DiscoverSites(t.Context(), []string{page}, nil)
	st := sites.Statuses()
	require.Len(t, st, 1)
	require.Empty(t, st[0].Error)
	assert.Len(t, st[0].Tools, 1, "a:b and a_b make one tool name")
	skipped := map[string]string{}
	for _, s := range st[0].Skipped {
		skipped[s.Action] = s.Reason
	}
	assert.Len(t, skipped, 2)
	assert.Equal(t, `inputSchema does not have type "object", which MCP requires`, skipped["list"])
	assert.Contains(t, []string{skipped["a:b"], skipped["a_b"]}, "no free tool name for this action")

	want, err := json.Marshal(st[0].Skipped)
	require.NoError(t, err)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sites.AddTools(server)
	sites.AddResources(server)
	cs := connect(t, server)
	assert.Contains(t, statusOutputSchema(t, cs), `"required":["action","reason"]`, "the output schema documents a skipped action's members")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolWebAgentsStatus})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out struct {
		Sites []struct {
			Skipped json.RawMessage `json:"skipped"`
		} `json:"sites"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Len(t, out.Sites, 1)
	assert.JSONEq(t, string(want), string(out.Sites[0].Skipped))
	assert.Contains(t, string(out.Sites[0].Skipped), `{"action":"list","reason":`)

	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: SiteStatusURI})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(read.Contents[0].Text), &out))
	assert.JSONEq(t, string(want), string(out.Sites[0].Skipped))
}
