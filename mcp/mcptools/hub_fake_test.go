package mcptools

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeHub is a Hub of a test's own: what a user of AddHubTools writes to
// test a server without an extension.
type fakeHub struct {
	mu    sync.Mutex
	calls []string
	typed *extbridge.TypeOptions
	fail  error
	empty bool // return (nil, nil)
}

func (f *fakeHub) record(call string) (*extbridge.BrowserResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.fail != nil || f.empty {
		return nil, f.fail
	}
	return &extbridge.BrowserResult{URL: "https://fake.example/", Title: "Fake", Content: "text of " + call}, nil
}

func (f *fakeHub) Navigate(_ context.Context, url string) (*extbridge.BrowserResult, error) {
	return f.record("navigate " + url)
}
func (f *fakeHub) Read(_ context.Context, selector string) (*extbridge.BrowserResult, error) {
	return f.record("read " + selector)
}
func (f *fakeHub) Click(_ context.Context, selector string) (*extbridge.BrowserResult, error) {
	return f.record("click " + selector)
}
func (f *fakeHub) Type(_ context.Context, selector, text string, opts *extbridge.TypeOptions) (*extbridge.BrowserResult, error) {
	f.mu.Lock()
	f.typed = opts
	f.mu.Unlock()
	return f.record("type " + selector + " " + text)
}
func (f *fakeHub) Screenshot(context.Context) (*extbridge.Screenshot, error) {
	if _, err := f.record("screenshot"); err != nil || f.empty {
		return nil, err
	}
	return &extbridge.Screenshot{Data: []byte("png"), MIMEType: "image/png", URL: "https://fake.example/", Title: "Fake"}, nil
}
func (f *fakeHub) Tabs(context.Context) ([]extbridge.Tab, error) {
	_, err := f.record("tabs")
	return nil, err
}

// TestAddHubToolsFake: AddHubTools takes any Hub, so a server's hub tools
// are tested against a fake: each tool sends its command with the call's
// arguments, a hub error is a result with isError, and a Hub answering
// neither a result nor an error fails the call instead of claiming success.
func TestAddHubToolsFake(t *testing.T) {
	hub := &fakeHub{}
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddHubTools(server, hub, nil)
	seen := toolErrors(server)
	cs := connect(t, server)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	res := call(ToolHubNavigate, map[string]any{"url": "https://fake.example/"})
	require.False(t, res.IsError, "%v", res.Content)
	assert.JSONEq(t, `{"url":"https://fake.example/","title":"Fake"}`, res.Content[0].(*mcp.TextContent).Text)
	res = call(ToolHubRead, map[string]any{"selector": "main"})
	assert.Equal(t, "text of read main", res.Content[0].(*mcp.TextContent).Text)
	call(ToolHubClick, map[string]any{"selector": "#buy"})
	call(ToolHubType, map[string]any{"selector": "#q", "text": "keyboard", "pressEnter": true})
	res = call(ToolHubScreenshot, nil)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "image/png", res.Content[0].(*mcp.ImageContent).MIMEType)
	res = call(ToolHubTabs, nil)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, []string{"navigate https://fake.example/", "read main", "click #buy", "type #q keyboard", "screenshot", "tabs"}, hub.calls)
	assert.Equal(t, &extbridge.TypeOptions{PressEnter: true}, hub.typed)

	hub.fail = errors.New("no browser extension connected on port 1")
	res = call(ToolHubRead, nil)
	assert.True(t, res.IsError)
	assert.Equal(t, "no browser extension connected on port 1", res.Content[0].(*mcp.TextContent).Text)

	hub.fail, hub.empty = nil, true
	for name, args := range map[string]map[string]any{ToolHubNavigate: {"url": "https://fake.example/"}, ToolHubRead: {}, ToolHubScreenshot: {}} {
		res = call(name, args)
		assert.True(t, res.IsError, name)
		assert.ErrorIs(t, *seen, ErrHubNoResult, name)
		assert.Equal(t, "the hub returned no result", res.Content[0].(*mcp.TextContent).Text, name)
	}
	assert.PanicsWithValue(t, "mcptools: AddHubTools with a nil Hub", func() { AddHubTools(server, nil, nil) })
}
