// Package mcptools exposes the three protocols of agentbridge as Model Context
// Protocol tools on an [mcp.Server] of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk):
//
//   - [AddBridgeTools]: the WebOperator bridge's tool catalogue (browser_snapshot,
//     browser_navigate, …, weboperator_execute_goal) over the agent socket,
//     with the reference MCP server's names, descriptions and schemas;
//   - [AddHubTools]: the browser extension connected to an embedded
//     extbridge.Hub (hub_navigate, hub_read, hub_click, hub_type,
//     hub_screenshot, hub_tabs), or to any [Hub], such as a test's fake;
//   - [DiscoverSites] and [Sites.AddTools]: one tool per WebAgents action of
//     each site, named "<host>_<action>", plus webagents_batch and
//     webagents_status.
//
// It also has the two transports the agentbridge-mcp command serves:
// [StdioTransport], a stdio transport that answers a malformed line with a
// JSON-RPC error and keeps the session (the SDK's ends it) and accepts
// JSON-RPC batches up to protocol 2025-03-26; [NewHTTPHandler], the
// streamable HTTP handler behind a bearer token and loopback Host/Origin
// checks, with resumable streams, protocol 2026-07-28 on a stateless handler
// and JSON-RPC errors where the SDK answers plain text, and no response to a
// request the client cancelled; [CancelTransport], which sends none on
// stdio either, as MCP says;
// and [KeepToolOrder], which lists tools in the order they were added
// rather than by name.
//
// A bridge tool's first text is the reference MCP server's, byte for byte,
// and its structured content the whole result, valid against the tool's
// output schema; every tool has a title and annotations.
//
// And what a first-class server offers besides tools: [AddCaptureResources]
// keeps screenshots and snapshots as resources linked from their results,
// [Sites.AddResources] makes webagents_status and each site's manifest
// resources, [ClientLogHandler] sends the server's log to clients at the
// level each set, and [AddErrorCodes] gives every error a JSON-RPC code.
//
// # Quick start
//
// The package is a library for MCP servers of your own; the agentbridge-mcp
// command (cmd/agentbridge-mcp) is one. It lives in its own module, so that
// the agentbridge module's users never pull the MCP SDK:
//
//	go get github.com/agentbridge/agentbridge/mcp
//
// A server with the bridge's tools and one site's, over stdio:
//
//	ctx := context.Background()
//	server := mcp.NewServer(&mcp.Implementation{Name: "my-agent-tools", Version: "0.1"}, nil)
//	bridge := mcptools.NewBridgeDialerFromEnv(nil) // WEBOPERATOR_AGENT_SOCKET, WEBOPERATOR_API_TOKEN
//	defer bridge.Close()
//	mcptools.AddBridgeTools(server, bridge)
//	mcptools.DiscoverSites(ctx, []string{"https://shop.example/"}, nil).AddTools(server)
//	err := server.Run(ctx, &mcptools.CancelTransport{Transport: &mcptools.StdioTransport{In: os.Stdin, Out: os.Stdout}})
//	if err != nil {
//		log.Fatal(err)
//	}
//
// (This is the package's Example, which the tests compile.)
//
// # Errors
//
// What fails in a source (extension offline, bridge unreachable, hub not
// connected, site error, consent refused, arguments that fail the schema) is a
// tool result with isError and a message for the model, never a protocol
// error: an agent sees it and can act on it. Unknown tools and malformed
// requests are protocol errors, as MCP says. The result also carries the Go
// error for your server's middleware (mcp.CallToolResult.GetError), matched
// with errors.Is: [ErrBridgeUnreachable], [ErrApprovalDenied],
// [ErrApprovalUnavailable], [ErrHubNoResult]. Their Error() texts start with "mcptools: ", as
// every sentinel of this package does; the model reads them without it.
// A site's discovery outcome is a [SiteStatus] whose Status is the typed
// webagents.DiscoveryStatus, and whose Skipped actions are
// [SkippedAction] values, the action's name and the reason apart.
//
// # Limits
//
// A stdio line is at most [DefaultMaxLineLength] bytes (16 MiB, the SDK's
// default) unless StdioTransport.MaxLineLength says otherwise, a batch at
// most [DefaultMaxBatchLength] (100) messages; an HTTP request body at most
// [DefaultMaxRequestBodyBytes] (4 MiB), the events kept for resuming streams
// [DefaultEventStoreBytes] (10 MiB). Capture resources are at most
// [DefaultMaxCaptures] (32) and [DefaultMaxCaptureBytes] (64 MiB), the
// oldest dropped first; log records wait for clients in a queue of
// [DefaultClientLogQueue] (64), dropped when it is full. The sources keep their
// own packages' limits: the agent protocol client's response size, the hub's
// frame limits and command timeouts, the webagents client's document and
// response caps and, for the default site client, its transport's 64 KiB of
// response headers (1xx responses included).
//
// An HTTP session idle for [DefaultSessionTimeout] (1 h) is closed. A bridge
// tool's text is agentproto/tools' Result.Text (JSON indented 64 levels deep,
// deeper containers compact, at most 16 MiB, then a line saying what was
// cut), and its structured content carries results at most
// 990 levels deep (the go-sdk refuses 1,000), else "result": null and
// a note; a cancelled goal sends tasks.stop within 5 s. Each site origin's cookie jar keeps at most [MaxSiteCookies] (50)
// cookies of at most [MaxSiteCookieBytes] (4,096) bytes of name and value,
// RFC 6265's minimums for browsers. Site tool names are "<host>_<action>"
// for every site, numbered on a clash, within MCP's rules (at most 128 bytes
// of A-Za-z0-9_.-).
//
// # Concurrency
//
// Tool handlers run concurrently, one goroutine per call, as the SDK calls
// them; every source is safe for concurrent use. A call's context ends when
// the client cancels the request or the session ends, and that cancels the
// underlying bridge call, hub command or batch, and stops a goal's task.
//
// # Security
//
// Page text, snapshots and site results are untrusted data. What a WebAgents
// site wrote (action descriptions, answers) reaches the model between
// <untrusted-site-data …> and </untrusted-site-data> markers, as JSON that
// cannot hold a marker. Writes to a site need explicit consent
// ([DiscoverSitesOptions].AllowWrites, AllowIrreversible), checked before
// anything is sent, and carry an Idempotency-Key the model can reuse to
// retry without running an action twice. The default site client keeps
// cookies per origin ([NewSiteCookieJar]): no site sees another's session. The HTTP handler refuses non-loopback peers
// and Host names, any browser Origin not explicitly allowed, and requests
// without the bearer token. Nothing is logged to standard output.
package mcptools
