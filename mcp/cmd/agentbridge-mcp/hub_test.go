package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/mcp/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hubToken = "0123456789abcdef0123456789abcdef"

var hubAddr = regexp.MustCompile(`msg="extension hub listening" addr=(\S+)`)

// dialHub connects extbridgetest's fake extension to the hub the process
// serves, with a scripted browser.
func dialHub(t *testing.T, stderr *syncBuffer) *extbridgetest.Browser {
	t.Helper()
	addr := stderr.waitMatch(t, hubAddr)
	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop", Text: map[string]string{"": "Welcome to the shop", "h1": "Shop"}})
	browser.OpenTab("https://docs.example/")
	ext, err := extbridgetest.Dial(t.Context(), "ws://"+addr+"/ws", &extbridgetest.Options{Token: hubToken, Browser: browser})
	require.NoError(t, err)
	t.Cleanup(func() { ext.Close() })
	return browser
}

func TestHubTools(t *testing.T) {
	env := []string{envHubToken + "=" + hubToken}
	args := []string{"--hub", "127.0.0.1:0"}
	run := func(t *testing.T, cs *mcp.ClientSession, stderr *syncBuffer) {
		tools := toolNames(t, cs)
		for _, name := range []string{mcptools.ToolHubNavigate, mcptools.ToolHubRead, mcptools.ToolHubClick,
			mcptools.ToolHubType, mcptools.ToolHubScreenshot, mcptools.ToolHubTabs} {
			require.Contains(t, tools, name)
		}
		assert.NotContains(t, tools, "browser_snapshot", "--hub alone does not enable the bridge")
		assert.True(t, tools[mcptools.ToolHubRead].Annotations.ReadOnlyHint)

		// Before the extension connects: the hub's own message.
		res := call(t, cs, mcptools.ToolHubNavigate, map[string]any{"url": "https://shop.example/"})
		assert.True(t, res.IsError)
		assert.Regexp(t, `^no browser extension connected on port \d+$`, text(res))

		browser := dialHub(t, stderr)

		res = call(t, cs, mcptools.ToolHubNavigate, map[string]any{"url": "https://shop.example/"})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"url":"https://shop.example/","title":"Shop"}`, mustJSON(t, res.StructuredContent))

		res = call(t, cs, mcptools.ToolHubRead, map[string]any{})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "Welcome to the shop", text(res))
		res = call(t, cs, mcptools.ToolHubRead, map[string]any{"selector": "#missing"})
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "no element matches selector #missing")

		res = call(t, cs, mcptools.ToolHubClick, map[string]any{"selector": "button.buy"})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, []string{"button.buy"}, browser.Clicks())

		res = call(t, cs, mcptools.ToolHubType, map[string]any{"selector": "input[name=q]", "text": "keyboard", "pressEnter": true})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "keyboard", browser.Value("input[name=q]"))

		res = call(t, cs, mcptools.ToolHubScreenshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		require.NotEmpty(t, res.Content)
		img, ok := res.Content[0].(*mcp.ImageContent)
		require.True(t, ok, "first content is an image: %#v", res.Content[0])
		assert.Equal(t, "image/png", img.MIMEType)
		assert.Equal(t, browser.Image(), img.Data)

		res = call(t, cs, mcptools.ToolHubTabs, map[string]any{})
		require.False(t, res.IsError, text(res))
		var tabs struct {
			Tabs []struct {
				URL    string `json:"url"`
				Active bool   `json:"active"`
			} `json:"tabs"`
		}
		require.NoError(t, json.Unmarshal([]byte(mustJSON(t, res.StructuredContent)), &tabs))
		require.Len(t, tabs.Tabs, 2)
		assert.Equal(t, "https://shop.example/", tabs.Tabs[0].URL)
		assert.True(t, tabs.Tabs[0].Active)

		// Arguments that fail the schema are refused before anything is sent.
		res = call(t, cs, mcptools.ToolHubClick, map[string]any{"selector": "a", "force": true})
		assert.True(t, res.IsError)
		res = call(t, cs, mcptools.ToolHubType, map[string]any{"selector": "a"})
		assert.True(t, res.IsError)
		assert.Equal(t, []string{"button.buy"}, browser.Clicks(), "nothing more was clicked")
	}
	t.Run("stdio", func(t *testing.T) {
		cs, stderr := startStdio(t, nil, env, args...)
		run(t, cs, stderr)
	})
	t.Run("http", func(t *testing.T) {
		url, stderr := startHTTP(t, env, args...)
		run(t, connectHTTP(t, url, nil), stderr)
	})
}

func TestHubApprovals(t *testing.T) {
	env := []string{envHubToken + "=" + hubToken}
	args := []string{"--hub", "127.0.0.1:0", "--hub-confirm"}

	t.Run("no elicitation", func(t *testing.T) {
		cs, stderr := startStdio(t, nil, env, args...)
		browser := dialHub(t, stderr)
		res := call(t, cs, mcptools.ToolHubClick, map[string]any{"selector": "button.buy"})
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "does not support elicitation")
		assert.Empty(t, browser.Clicks())
		res = call(t, cs, mcptools.ToolHubRead, map[string]any{})
		assert.False(t, res.IsError, "reads need no approval: %s", text(res))
	})
	t.Run("elicitation", func(t *testing.T) {
		answer := "decline"
		var asked []string
		opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: answer}, nil
		}}
		cs, stderr := startStdio(t, opts, env, args...)
		browser := dialHub(t, stderr)
		res := call(t, cs, mcptools.ToolHubClick, map[string]any{"selector": "button.buy"})
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "did not approve")
		assert.Empty(t, browser.Clicks())
		answer = "accept"
		res = call(t, cs, mcptools.ToolHubClick, map[string]any{"selector": "button.buy"})
		assert.False(t, res.IsError, text(res))
		assert.Equal(t, []string{"button.buy"}, browser.Clicks())
		assert.Equal(t, []string{"Allow the agent to click button.buy in your browser?", "Allow the agent to click button.buy in your browser?"}, asked)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// TestHubApprovalsElicitRequest: on protocols before 2026-07-28 the approval
// is an elicitation/create request the server sends in the middle of the
// tool call, spoken here by hand.
func TestHubApprovalsElicitRequest(t *testing.T) {
	s, stderr := startRaw(t, []string{envHubToken + "=" + hubToken}, "--hub", "127.0.0.1:0", "--hub-confirm")
	browser := dialHub(t, stderr)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.next()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		action  string
		isError bool
		clicks  []string
	}{{"decline", true, nil}, {"accept", false, []string{"#buy"}}} {
		s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hub_click","arguments":{"selector":"#buy"}}}`)
		req := s.next()
		require.Equal(t, "elicitation/create", req["method"], "%v", req)
		params := req["params"].(map[string]any)
		assert.Equal(t, "Allow the agent to click #buy in your browser?", params["message"])
		id, _ := json.Marshal(req["id"])
		s.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"` + c.action + `"}}`)
		reply := s.next()
		result := reply["result"].(map[string]any)
		assert.Equal(t, c.isError, result["isError"] == true, "%v", reply)
		assert.Equal(t, c.clicks, browser.Clicks())
	}
}
