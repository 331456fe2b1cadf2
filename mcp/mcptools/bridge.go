package mcptools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddBridgeTools registers on s the WebOperator bridge's tool catalogue
// ([tools.List]: the reference MCP server's names, descriptions and
// schemas, so an agent configured for it works unchanged), calling c for each
// tool (an *agentproto.Client, or a [BridgeDialer] that dials on demand).
// tools/list lists them in the catalogue's order ([KeepToolOrder]), each
// with a title, annotations and an output schema.
//
// Arguments are checked against the tool's schema before anything is sent; a
// failure is a tool result with isError naming the offending argument.
// A result's first text is byte for byte the reference's
// ([tools.Result].Text) and its structuredContent the whole result
// ([tools.Result].Structured, valid against the tool's
// outputSchema); screenshots are MCP image content alone, with the MIME type
// of the extension's data URL. Bridge errors (extension offline, timeout,
// unauthorized, socket unreachable) are tool results with isError and the
// bridge's exact message, never protocol errors. weboperator_execute_goal
// sends progress notifications when the client asked for progress: the task
// started, then one per finished step with the plan's length as the total
// (when c carries events: an [agentproto.EventCaller] such as a
// [BridgeDialer]). The MCP request's context is the call's: cancelling the
// request cancels the bridge call, and stops a goal's task that started.
func AddBridgeTools(s *mcp.Server, c agentproto.Caller) {
	catalogue := tools.List()
	names := make([]string, len(catalogue))
	for i, t := range catalogue {
		names[i] = t.Name
		s.AddTool(bridgeTool(t), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			progress := newProgress(ctx, req)
			res, err := tools.Call(ctx, c, t.Name, req.Params.Arguments, &tools.CallOptions{
				Progress: func(p tools.Progress) { progress(float64(p.Done), float64(p.Total), p.Message) },
			})
			if err != nil {
				return errorResult(err), nil
			}
			return bridgeResult(t.Name, res), nil
		})
	}
	KeepToolOrder(s, names...)
}

// bridgeTool is the MCP tool of a catalogue entry.
func bridgeTool(t tools.Tool) *mcp.Tool {
	a := t.Annotations
	return &mcp.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations:  annotations(a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld),
	}
}

// annotations are MCP tool annotations with every hint given.
func annotations(readOnly, destructive, idempotent, openWorld bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive, IdempotentHint: idempotent, OpenWorldHint: &openWorld}
}

// bridgeResult is the MCP result of a bridge tool's result, by kind: one
// function per kind, which what a kind adds (resource links for snapshots
// and screenshots) extends; tool names the tool.
func bridgeResult(tool string, res *tools.Result) *mcp.CallToolResult {
	if res.Image != nil {
		return screenshotResult(res)
	}
	return textResult(res)
}

// textResult: the reference's text, and the whole result as structured
// content.
func textResult(res *tools.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Text}},
		StructuredContent: res.Structured,
	}
}

// screenshotResult: the image alone as content (as the reference's, which
// never found the extension's image), what it is as structured content.
func screenshotResult(res *tools.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.ImageContent{Data: res.Image.Data, MIMEType: res.Image.MIMEType}},
		StructuredContent: res.Structured,
	}
}

// errorResult is a tool result with isError carrying err's text for the
// model ([modelText]: for a bridge error, the bridge's message unchanged),
// and err for middleware.
func errorResult(err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: modelText(err)}}}
	res.SetError(err)
	return res
}

// BridgeDialer is an [agentproto.Caller] that dials the agent socket on the
// first call and again after the connection is lost, so that a server started
// before the bridge (or outliving a browser restart) recovers by itself. A
// call made while the socket cannot be reached fails at once with an error
// saying so ([ErrBridgeUnreachable]); nothing is retried behind the caller's
// back, and no other transport is tried.
//
// The zero value dials the platform's socket path without a token, reading
// no environment variable; [NewBridgeDialerFromEnv] reads the reference's.
// Set the fields before the first call and do not change them after.
// BridgeDialer is safe for concurrent use; calls share one connection.
type BridgeDialer struct {
	// Path is the socket path; "" means agentproto.PlatformSocketPath()
	// (the environment is not read: see [NewBridgeDialerFromEnv]).
	Path string
	// Options are the client's options (token, peer check, limits). Nil
	// means no token.
	Options *agentproto.ClientOptions
	// Logger receives connection changes. Nil is silent.
	Logger *slog.Logger

	mu     sync.Mutex
	client *agentproto.Client
	closed bool
}

// NewBridgeDialerFromEnv returns a [BridgeDialer] for the socket and token
// the reference MCP server reads: WEBOPERATOR_AGENT_SOCKET (else the
// platform's default path) and WEBOPERATOR_API_TOKEN, read with getenv
// (nil means os.Getenv).
func NewBridgeDialerFromEnv(getenv func(string) string) *BridgeDialer {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &BridgeDialer{
		Path:    getenv(agentproto.EnvSocket),
		Options: &agentproto.ClientOptions{Token: getenv(agentproto.EnvToken)},
	}
}

// ErrBridgeUnreachable is matched by a [BridgeDialer] call's error when the
// agent socket cannot be dialed: "mcptools: the WebOperator bridge socket is
// not reachable at PATH: …". A bridge tool's result says the same to the
// model without the "mcptools: " prefix, and keeps the error for middleware
// (mcp.CallToolResult.GetError).
var ErrBridgeUnreachable = errors.New("mcptools: the WebOperator bridge socket is not reachable")

// Call sends one command through the current connection, dialing first when
// there is none.
func (d *BridgeDialer) Call(ctx context.Context, typ string, payload any, result any) error {
	c, err := d.conn(ctx)
	if err != nil {
		return err
	}
	err = c.Call(ctx, typ, payload, result)
	if errors.Is(err, agentproto.ErrClosed) {
		d.drop(c)
	}
	return err
}

// Subscribe subscribes to the events of the current connection, as
// [agentproto.Client.Subscribe] does; nil when there is none. With it a
// BridgeDialer is an [agentproto.EventCaller]: a goal reports its steps.
func (d *BridgeDialer) Subscribe(opts *agentproto.SubscribeOptions) *agentproto.Subscription {
	d.mu.Lock()
	c := d.client
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Subscribe(opts)
}

func (d *BridgeDialer) conn(ctx context.Context) (*agentproto.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, agentproto.ErrClosed
	}
	if d.client != nil {
		return d.client, nil
	}
	path := d.Path
	if path == "" {
		path = agentproto.PlatformSocketPath()
	}
	c, err := agentproto.Dial(ctx, path, d.Options)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrBridgeUnreachable, path, err)
	}
	if d.Logger != nil {
		d.Logger.Info("connected to the bridge", "socket", path)
	}
	d.client = c
	return c, nil
}

// drop forgets c (closing it) when it is still the current connection.
func (d *BridgeDialer) drop(c *agentproto.Client) {
	d.mu.Lock()
	if d.client == c {
		d.client = nil
	}
	d.mu.Unlock()
	c.Close()
	if d.Logger != nil {
		d.Logger.Info("bridge connection lost; the next call dials again")
	}
}

// Close closes the current connection; later calls fail with
// agentproto.ErrClosed. Close is idempotent.
func (d *BridgeDialer) Close() error {
	d.mu.Lock()
	c := d.client
	d.client, d.closed = nil, true
	d.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}
