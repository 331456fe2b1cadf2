package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/agentbridge/agentbridge/mcp/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBridgeDropIn: against the built binary, every bridge tool answers the
// stand-in extension's results with the reference mcp-server.js's text
// (before: the extension's JSON, and the goal's whole summary), its whole
// result as structuredContent valid against its outputSchema; tools/list
// follows the reference's catalogue, then the hub's tools, then the sites'
// (before: by name); every tool has a title and annotations.
func TestBridgeDropIn(t *testing.T) {
	path := socketPath(t)
	ext := newStandIn()
	startBridge(t, path, ext, nil)
	page, _ := startShop(t)
	env := append(bridgeEnv(path, bridgeToken), envHubToken+"="+hubToken)
	args := []string{"--bridge", "--hub", "127.0.0.1:0", "--site", page}
	transports(t, env, args, nil, func(t *testing.T, cs *mcp.ClientSession) {
		list, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			assert.NotEmpty(t, tool.Title, tool.Name)
			if assert.NotNil(t, tool.Annotations, tool.Name) {
				assert.NotNil(t, tool.Annotations.DestructiveHint, tool.Name)
				assert.NotNil(t, tool.Annotations.OpenWorldHint, tool.Name)
			}
		}
		var want []string
		for _, tool := range tools.List() {
			want = append(want, tool.Name)
		}
		want = append(want, mcptools.ToolHubNavigate, mcptools.ToolHubRead, mcptools.ToolHubClick, mcptools.ToolHubType,
			mcptools.ToolHubScreenshot, mcptools.ToolHubTabs)
		require.Greater(t, len(names), len(want)+2)
		assert.Equal(t, want, names[:len(want)], "the reference's catalogue, then the hub's")
		assert.Equal(t, siteTool(page, "account.me"), names[len(want)], "then the site's, in discovery's order")
		assert.Equal(t, []string{mcptools.ToolWebAgentsBatch, mcptools.ToolWebAgentsStatus}, names[len(names)-2:])

		schemas := map[string]*jsonschema.Schema{}
		for _, tool := range list.Tools {
			if tool.OutputSchema == nil {
				continue
			}
			c := jsonschema.NewCompiler()
			require.NoError(t, c.AddResource(tool.Name, bytes.NewReader([]byte(mustJSON(t, tool.OutputSchema)))))
			schemas[tool.Name] = c.MustCompile(tool.Name)
		}
		snapshot, err := json.MarshalIndent(map[string]any{"kind": "snapshot", "snapshot": map[string]any{
			"url": "https://example.com/", "title": "Example", "nodes": []any{
				map[string]any{"ref": "@e1", "role": "link", "name": "More information"}}}}, "", "  ")
		require.NoError(t, err)
		tests := []struct {
			tool string
			args map[string]any
			want string // the reference's text
		}{
			{tools.BrowserSnapshot, map[string]any{}, string(snapshot)},
			{tools.BrowserNavigate, map[string]any{"url": "https://example.com/"}, "Navigated to https://example.com/. Current title: Example"},
			{tools.BrowserClick, map[string]any{"index": 3}, "Clicked element. ok"},
			{tools.BrowserType, map[string]any{"selector": "#q", "text": "hello"}, `Typed into element: "hello". ok`},
			{tools.BrowserPress, map[string]any{"key": "Enter"}, `Pressed key "Enter". ok`},
			{tools.BrowserScroll, map[string]any{"direction": "up"}, "Scrolled up. ok"},
			{tools.BrowserScreenshot, map[string]any{}, ""},
			{tools.BrowserExtract, map[string]any{"instruction": "title"},
				"{\n  \"kind\": \"action:result\",\n  \"result\": {\n    \"extracted\": [\n      {\n        \"ref\": \"@e1\",\n        \"text\": \"Example Domain\"\n      }\n    ],\n    \"ok\": true\n  }\n}"},
			{tools.BrowserSolveCaptcha, map[string]any{"type": "slider"}, "{\n  \"ok\": false,\n  \"reason\": \"no captcha found\"\n}"},
			{tools.ExecuteGoal, map[string]any{"goal": "read the title"}, "The title is Example"},
		}
		require.Len(t, tests, len(tools.List()), "every bridge tool")
		for _, tt := range tests {
			res := call(t, cs, tt.tool, tt.args)
			require.False(t, res.IsError, "%s: %s", tt.tool, text(res))
			require.NotEmpty(t, res.Content, tt.tool)
			if tt.tool == tools.BrowserScreenshot {
				// The image, as the reference's; after it only the link
				// to the capture resource, which the reference has not.
				img, ok := res.Content[0].(*mcp.ImageContent)
				require.True(t, ok, "%#v", res.Content[0])
				assert.Equal(t, fakeJPEG, img.Data)
				for _, c := range res.Content[1:] {
					_, ok := c.(*mcp.ResourceLink)
					assert.True(t, ok, "after the image, only a resource link: %#v", c)
				}
			} else {
				assert.Equal(t, tt.want, text(res), tt.tool)
			}
			require.NotNil(t, res.StructuredContent, tt.tool)
			var v any
			require.NoError(t, json.Unmarshal([]byte(mustJSON(t, res.StructuredContent)), &v))
			require.Contains(t, schemas, tt.tool)
			assert.NoError(t, schemas[tt.tool].Validate(v), "%s: %s", tt.tool, mustJSON(t, res.StructuredContent))
		}
		assert.JSONEq(t, `{"type":"slider"}`, string(ext.payload(tools.TypeSolveCaptcha)))
		res := call(t, cs, tools.BrowserSolveCaptcha, map[string]any{"type": "geetest"})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"type":"geetest"}`, string(ext.payload(tools.TypeSolveCaptcha)), "a type the catalogue does not list is forwarded")
	})
}

// TestBridgeGoalProgress: through the built binary, a goal reports one
// progress notification per finished step, with the plan's length as the
// total (before: two, without a total).
func TestBridgeGoalProgress(t *testing.T) {
	path := socketPath(t)
	ext := newStandIn()
	var b *agentprototest.Bridge
	ext.beforeWait = func() error {
		for _, e := range []string{
			`{"kind":"task:update","task":{"id":"task-1","status":"running","plan":{"steps":[{"description":"read"},{"description":"answer"}]}}}`,
			`{"kind":"task:step","taskId":"task-1","step":{"id":"s1","index":0,"status":"ok","toolCall":{"name":"extract"}}}`,
			`{"kind":"task:step","taskId":"task-1","step":{"id":"s2","index":1,"status":"ok","toolCall":{"name":"done"}}}`,
		} {
			if err := b.Extension.Emit(json.RawMessage(e)); err != nil {
				return err
			}
		}
		return nil
	}
	b = startBridge(t, path, ext, nil)
	notified := make(chan mcp.ProgressNotificationParams, 16)
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		notified <- *req.Params
	}}
	cs, _ := startStdio(t, opts, bridgeEnv(path, bridgeToken))
	params := &mcp.CallToolParams{Name: tools.ExecuteGoal, Arguments: map[string]any{"goal": "read the title", "timeoutMs": 5000}}
	params.SetProgressToken("goal-1")
	res, err := cs.CallTool(t.Context(), params)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	// The client may handle notifications after the response.
	type report struct {
		progress, total float64
		message         string
	}
	var reports []report
	for len(reports) < 3 {
		select {
		case p := <-notified:
			reports = append(reports, report{p.Progress, p.Total, p.Message})
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d progress notifications: %v", len(reports), reports)
		}
	}
	assert.Equal(t, []report{
		{0, 0, "Task task-1 started; waiting up to 5s for it to finish"},
		{1, 2, "Step 1 (extract): ok"},
		{2, 2, "Step 2 (done): ok"},
	}, reports)
}
