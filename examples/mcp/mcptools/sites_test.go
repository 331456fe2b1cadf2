package mcptools

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/shop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startShop(t *testing.T) string {
	t.Helper()
	s, err := shop.New(&shop.Options{PBKDF2Iterations: 1000})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL + "/products"
}

// TestSiteToolNames: two sites publishing the same action names, and a name
// another source reserved, get the site's host as a prefix; tool names stay
// valid MCP names.
func TestSiteToolNames(t *testing.T) {
	a, b := startShop(t), startShop(t)
	sites := DiscoverSites(t.Context(), []string{a, b}, &SiteToolsOptions{ReservedNames: []string{"cart.state"}})
	st := sites.Statuses()
	require.Len(t, st, 2)
	hostA := strings.TrimPrefix(strings.TrimSuffix(a, "/products"), "http://")
	hostB := strings.TrimPrefix(strings.TrimSuffix(b, "/products"), "http://")
	prefixA := strings.NewReplacer(":", "_").Replace(hostA) + "_"
	prefixB := strings.NewReplacer(":", "_").Replace(hostB) + "_"
	assert.Contains(t, st[0].Tools, "catalog.search")
	assert.Contains(t, st[0].Tools, prefixA+"cart.state", "reserved by another source")
	assert.Contains(t, st[1].Tools, prefixB+"catalog.search", "taken by the first site")
	assert.Len(t, st[1].Tools, len(st[0].Tools))

	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sites.AddTools(server)
	cs := connect(t, server)
	names := map[string]bool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		require.NoError(t, err)
		names[tool.Name] = true
		assert.Regexp(t, `^[A-Za-z0-9_.-]{1,128}$`, tool.Name)
	}
	assert.Len(t, names, 2*len(st[0].Tools)+2)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: prefixB + "catalog.search", Arguments: map[string]any{"query": "keyboard"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, "%v", res.Content)
}

func TestObjectSchema(t *testing.T) {
	for schema, ok := range map[string]bool{
		`{"type":"object"}`: true, `{"type":"object","properties":{}}`: true,
		`{"properties":{}}`: false, `{"type":["object","null"]}`: false, `true`: false, `[]`: false,
	} {
		assert.Equal(t, ok, objectSchema([]byte(schema)) == "", schema)
	}
	assert.Empty(t, objectSchema(nil), "no schema: any object")
}
