package mcptools

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
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

// TestSiteToolNames: every site's tools are named the same way, its host and
// port then the action; a site whose names another source reserved, or on
// the same host as an earlier site, gets a numbered prefix; names are valid
// MCP names, all distinct.
func TestSiteToolNames(t *testing.T) {
	a, b := startShop(t), startShop(t)
	hostA := strings.TrimPrefix(strings.TrimSuffix(a, "/products"), "http://")
	hostB := strings.TrimPrefix(strings.TrimSuffix(b, "/products"), "http://")
	prefixA := strings.NewReplacer(":", "_").Replace(hostA) + "_"
	prefixB := strings.NewReplacer(":", "_").Replace(hostB) + "_"
	sameHost := strings.Replace(a, "/products", "/cart", 1)
	sites := DiscoverSites(t.Context(), []string{a, b, sameHost}, &DiscoverSitesOptions{ReservedNames: []string{prefixB + "cart.state"}})
	st := sites.Statuses()
	require.Len(t, st, 3)
	assert.Contains(t, st[0].Tools, prefixA+"catalog.search", "the first site is prefixed like the others")
	assert.Contains(t, st[0].Tools, prefixA+"cart.state")
	prefixB2 := strings.TrimSuffix(prefixB, "_") + "-2_"
	assert.Contains(t, st[1].Tools, prefixB2+"catalog.search", "a name reserved by another source")
	assert.Contains(t, st[1].Tools, prefixB2+"cart.state")
	prefixA2 := strings.TrimSuffix(prefixA, "_") + "-2_"
	assert.Contains(t, st[2].Tools, prefixA2+"cart.state", "the same host as the first site")
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
	assert.Len(t, names, len(st[0].Tools)+len(st[1].Tools)+len(st[2].Tools)+2)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: prefixB2 + "catalog.search", Arguments: map[string]any{"query": "keyboard"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, "%v", res.Content)
}

// TestSitePrefix: a long host is cut, with a hash, so that every name stays
// within MCP's 128 bytes and two long hosts stay apart.
func TestSitePrefix(t *testing.T) {
	long := strings.Repeat("a", 200)
	p1, p2 := sitePrefix("https://"+long+".example/"), sitePrefix("https://"+long+".example.org/")
	assert.Len(t, p1, maxSitePrefixLen)
	assert.NotEqual(t, p1, p2)
	assert.LessOrEqual(t, len(p1+"-99_"+strings.Repeat("x", webagents.MaxActionNameChars)), maxToolNameLen)
	assert.Equal(t, "shop.example_8443", sitePrefix("https://shop.example:8443/x"))
	assert.Equal(t, "site", sitePrefix("/relative"))
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

// TestSiteStatuses: a site's status is the webagents discovery status, typed,
// its text in JSON; a URL discovery could not even try is
// DiscoveryUnknown, never a success.
func TestSiteStatuses(t *testing.T) {
	page := startShop(t)
	sites := DiscoverSites(t.Context(), []string{page, "ftp://shop.example/", "http://127.0.0.1:1/"}, nil)
	st := sites.Statuses()
	require.Len(t, st, 3)
	assert.Equal(t, webagents.DiscoveryFound, st[0].Status)
	assert.Empty(t, st[0].Error)
	assert.Equal(t, webagents.DiscoveryUnknown, st[1].Status)
	assert.Contains(t, st[1].Error, "not an http(s) URL")
	assert.Equal(t, webagents.DiscoveryUnavailable, st[2].Status)
	assert.NotEmpty(t, st[2].Error)

	data, err := json.Marshal(st[1:])
	require.NoError(t, err)
	assert.Contains(t, string(data), `"status":"unknown"`)
	assert.Contains(t, string(data), `"status":"unavailable"`)
	var back []SiteStatus
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, st[1:], back, "a status survives JSON")

	// webagents_status's output schema says what the JSON holds: a string.
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sites.AddTools(server)
	cs := connect(t, server)
	assert.Contains(t, statusOutputSchema(t, cs), `"status":{"type":"string"}`)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolWebAgentsStatus, Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.IsError, "%v", res.Content)
}

// statusOutputSchema is webagents_status's output schema as cs lists it, in
// JSON.
func statusOutputSchema(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	for tool, err := range cs.Tools(t.Context(), nil) {
		require.NoError(t, err)
		if tool.Name == ToolWebAgentsStatus {
			schema, err := json.Marshal(tool.OutputSchema)
			require.NoError(t, err)
			return string(schema)
		}
	}
	t.Fatal("no " + ToolWebAgentsStatus + " tool")
	return ""
}

// TestSiteConsentHint: a refusal for consent ends with what gives it in the
// server's own words; by default the library names no command-line flag.
func TestSiteConsentHint(t *testing.T) {
	page := startShop(t)
	for _, tc := range []struct {
		opts *DiscoverSitesOptions
		want string
	}{
		{nil, DefaultAllowWritesHint},
		{&DiscoverSitesOptions{AllowWritesHint: "the Writes switch in Settings"}, "the Writes switch in Settings"},
	} {
		sites := DiscoverSites(t.Context(), []string{page}, tc.opts)
		server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		sites.AddTools(server)
		res, err := connect(t, server).CallTool(t.Context(), &mcp.CallToolParams{Name: siteToolName(page, "cart.add"), Arguments: map[string]any{"productId": "kbd-75"}})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		text := strings.Join(resultTexts(res), "\n")
		assert.Equal(t, `refused before sending: operation "call" runs write action "cart.add", which needs `+tc.want, text)
		assert.NotContains(t, text, "--allow")
	}
}
