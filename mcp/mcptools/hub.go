package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools [AddHubTools] registers.
const (
	ToolHubNavigate   = "hub_navigate"
	ToolHubRead       = "hub_read"
	ToolHubClick      = "hub_click"
	ToolHubType       = "hub_type"
	ToolHubScreenshot = "hub_screenshot"
	ToolHubTabs       = "hub_tabs"
)

// Hub is what [AddHubTools] needs of an extension-bridge hub: the browser
// commands its tools send to the connected extension. [*extbridge.Hub]
// implements it, and is what a server passes; an implementation of your own
// (a fake browser in a test, a hub behind a proxy of yours) gets the same
// tools. The methods take the tool call's context, which ends when the
// client cancels the call, and are called concurrently, one call per tool
// call; an error becomes the call's result with isError and the error's
// text. A nil error comes with a non-nil result (a nil one fails the call
// with [ErrHubNoResult]).
type Hub interface {
	Navigate(ctx context.Context, url string) (*extbridge.BrowserResult, error)
	Read(ctx context.Context, selector string) (*extbridge.BrowserResult, error)
	Click(ctx context.Context, selector string) (*extbridge.BrowserResult, error)
	Type(ctx context.Context, selector, text string, opts *extbridge.TypeOptions) (*extbridge.BrowserResult, error)
	Screenshot(ctx context.Context) (*extbridge.Screenshot, error)
	Tabs(ctx context.Context) ([]extbridge.Tab, error)
}

var _ Hub = (*extbridge.Hub)(nil)

// ErrHubNoResult is matched by the error of a hub tool call whose [Hub]
// returned neither a result nor an error.
var ErrHubNoResult = errors.New("mcptools: the hub returned no result")

// hubResult is res, or ErrHubNoResult in place of a nil res with a nil
// error: a Hub of the user's own cannot make a tool claim success.
func hubResult[T any](res *T, err error) (*T, error) {
	if err == nil && res == nil {
		return nil, toolError{ErrHubNoResult}
	}
	return res, err
}

// HubToolsOptions configures [AddHubTools]. Nil means defaults.
type HubToolsOptions struct {
	// NeedsApproval reports whether a call of the named tool needs the
	// user's approval first. The server then asks through MCP elicitation
	// (a form with no fields: accept approves), and fails the call with a
	// clear message when the client does not support elicitation. Default:
	// no tool needs approval.
	NeedsApproval func(tool string) bool
}

// ErrApprovalUnavailable is matched by the error of a tool call that needs
// the user's approval when the MCP client does not support elicitation. The
// tool result's text, which the model reads, is this text without the
// "mcptools: " prefix; a server's middleware matches the result's error
// (mcp.CallToolResult.GetError) with errors.Is.
var ErrApprovalUnavailable = errors.New("mcptools: this tool call needs the user's approval, and the MCP client does not support elicitation")

// ErrApprovalDenied is matched by the error of a tool call the user
// declined, as [ErrApprovalUnavailable] is.
var ErrApprovalDenied = errors.New("mcptools: the user did not approve this tool call")

type hubNavigateIn struct {
	URL string `json:"url" jsonschema:"the URL to open in the controlled tab"`
}

type hubSelectorIn struct {
	Selector string `json:"selector,omitempty" jsonschema:"CSS selector of the element; empty reads the whole page body"`
}

type hubClickIn struct {
	Selector string `json:"selector" jsonschema:"CSS selector of the element to click"`
}

type hubTypeIn struct {
	Selector   string `json:"selector" jsonschema:"CSS selector of the input element"`
	Text       string `json:"text" jsonschema:"the text that replaces the element's value"`
	PressEnter bool   `json:"pressEnter,omitempty" jsonschema:"press Enter after typing"`
}

type hubEmptyIn struct{}

// hubPage is the structured result of the page-changing tools.
type hubPage struct {
	URL     string `json:"url"`
	Title   string `json:"title"`
	Content string `json:"content,omitempty"`
}

// AddHubTools registers on s the tools that drive the browser extension
// connected to hub (the extension bridge, usually an [*extbridge.Hub]): hub_navigate, hub_read, hub_click,
// hub_type, hub_screenshot (MCP image content with the extension's MIME type)
// and hub_tabs. Arguments are validated against the tools' schemas before
// anything is sent. A call made while no extension is connected fails with
// the hub's "no browser extension connected on port N"; every hub error is a
// tool result with isError and the hub's message. The call's context is the
// command's: a cancelled MCP request cancels the command.
func AddHubTools(s *mcp.Server, hub Hub, opts *HubToolsOptions) {
	if hub == nil {
		panic("mcptools: AddHubTools with a nil Hub")
	}
	if opts == nil {
		opts = &HubToolsOptions{}
	}
	approve := func(req *mcp.CallToolRequest, tool, what string) (*mcp.CallToolResult, error) {
		if opts.NeedsApproval == nil || !opts.NeedsApproval(tool) {
			return nil, nil
		}
		return askApproval(req, what)
	}
	KeepToolOrder(s, ToolHubNavigate, ToolHubRead, ToolHubClick, ToolHubType, ToolHubScreenshot, ToolHubTabs)
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubNavigate,
		Title:       "Open a URL (extension bridge)",
		Description: "Open a URL in the browser tab the extension controls (extension bridge), and return the tab's URL and title once loaded.",
		Annotations: annotations(false, false, true, true),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in hubNavigateIn) (*mcp.CallToolResult, hubPage, error) {
		if ask, err := approve(req, ToolHubNavigate, "open "+in.URL); ask != nil || err != nil {
			return ask, hubPage{}, err
		}
		res, err := hubResult(hub.Navigate(ctx, in.URL))
		if err != nil {
			return nil, hubPage{}, err
		}
		return nil, hubPage{URL: res.URL, Title: res.Title}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubRead,
		Title:       "Read the page (extension bridge)",
		Description: "Read the visible text of an element (CSS selector) or of the whole page in the controlled tab. The text is untrusted page content.",
		Annotations: annotations(true, false, true, true),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in hubSelectorIn) (*mcp.CallToolResult, hubPage, error) {
		res, err := hubResult(hub.Read(ctx, in.Selector))
		if err != nil {
			return nil, hubPage{}, err
		}
		page := hubPage{URL: res.URL, Title: res.Title, Content: res.Content}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}}, page, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubClick,
		Title:       "Click an element (extension bridge)",
		Description: "Click the first element matching a CSS selector in the controlled tab.",
		Annotations: annotations(false, true, false, true),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in hubClickIn) (*mcp.CallToolResult, hubPage, error) {
		if ask, err := approve(req, ToolHubClick, "click "+in.Selector); ask != nil || err != nil {
			return ask, hubPage{}, err
		}
		res, err := hubResult(hub.Click(ctx, in.Selector))
		if err != nil {
			return nil, hubPage{}, err
		}
		return nil, hubPage{URL: res.URL, Title: res.Title}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubType,
		Title:       "Type into a field (extension bridge)",
		Description: "Replace the value of the input matching a CSS selector with text in the controlled tab, then press Enter if asked.",
		Annotations: annotations(false, true, false, true), // Enter may submit
	}, func(ctx context.Context, req *mcp.CallToolRequest, in hubTypeIn) (*mcp.CallToolResult, hubPage, error) {
		if ask, err := approve(req, ToolHubType, "type into "+in.Selector); ask != nil || err != nil {
			return ask, hubPage{}, err
		}
		res, err := hubResult(hub.Type(ctx, in.Selector, in.Text, &extbridge.TypeOptions{PressEnter: in.PressEnter}))
		if err != nil {
			return nil, hubPage{}, err
		}
		return nil, hubPage{URL: res.URL, Title: res.Title}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubScreenshot,
		Title:       "Screenshot the tab (extension bridge)",
		Description: "Capture the visible part of the controlled tab as an image.",
		Annotations: annotations(true, false, true, true),
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ hubEmptyIn) (*mcp.CallToolResult, hubShotOut, error) {
		shot, err := hubResult(hub.Screenshot(ctx))
		if err != nil {
			return nil, hubShotOut{}, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{Data: shot.Data, MIMEType: shot.MIMEType},
			&mcp.TextContent{Text: fmt.Sprintf("Screenshot of %s (%s), %d bytes of %s.", shot.URL, shot.Title, len(shot.Data), shot.MIMEType)},
		}}, hubShotOut{URL: shot.URL, Title: shot.Title, MIMEType: shot.MIMEType, Size: len(shot.Data)}, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolHubTabs,
		Title:       "List the tabs (extension bridge)",
		Description: "List the browser's open tabs; the active one is the tab the extension controls.",
		Annotations: annotations(true, false, true, false),
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ hubEmptyIn) (*mcp.CallToolResult, hubTabsOut, error) {
		tabs, err := hub.Tabs(ctx)
		if err != nil {
			return nil, hubTabsOut{}, err
		}
		if tabs == nil {
			tabs = []extbridge.Tab{}
		}
		return nil, hubTabsOut{Tabs: tabs}, nil
	})
}

// hubShotOut is hub_screenshot's structured result: the image itself is
// the call's image content.
type hubShotOut struct {
	URL      string `json:"url"`
	Title    string `json:"title"`
	MIMEType string `json:"mimeType"`
	Size     int    `json:"size" jsonschema:"the image's size in bytes"`
}

type hubTabsOut struct {
	Tabs []extbridge.Tab `json:"tabs"`
}

// approvalInput is the id of the approval's elicitation in a tool call's
// input requests.
const approvalInput = "approval"

// askApproval asks the MCP client's user to approve what, through
// elicitation. The go-sdk's multi-round-trip requests do it on every protocol
// version: the first call returns a result asking for input (which the SDK
// turns into an elicitation/create request on protocols before 2026-07-28),
// and the retried call carries the user's answer. It returns a result to send
// back when input is needed, nil when approved, or an error.
func askApproval(req *mcp.CallToolRequest, what string) (*mcp.CallToolResult, error) {
	if answer, ok := req.Params.InputResponses[approvalInput]; ok {
		if res, ok := answer.(*mcp.ElicitResult); ok && res.Action == "accept" {
			return nil, nil
		}
		return nil, toolError{ErrApprovalDenied}
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return nil, toolError{ErrApprovalUnavailable}
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
		Mode:            "form",
		Message:         "Allow the agent to " + what + " in your browser?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
	}}}, nil
}
