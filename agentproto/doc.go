// Package agentproto implements the WebOperator agent protocol: how local
// agents drive a person's browser through the WebOperator extension.
//
//	agent ──Client──▶ Unix socket ──▶ Server + Host ──native messaging──▶ extension ──▶ tab
//
// Frames on both legs are Chrome's native messaging frames (a uint32
// little-endian length, then UTF-8 JSON). An agent sends
// {"id","type","payload","timeoutMs","token"} and gets {"id","result"} or
// {"id","error"}; events from the extension reach every connected agent as
// {"kind":"event","event":…}.
//
// # Quick start
//
// An agent:
//
//	c, err := agentproto.Dial(ctx, socketPath, &agentproto.ClientOptions{Token: token})
//	if err != nil { ... }
//	defer c.Close()
//	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
//	res, err := c.Click(ctx, agentproto.ClickParams{Ref: snap.Nodes[0].Ref})
//	if errors.Is(err, agentproto.ErrExtensionOffline) { ... }
//
// A bridge (what examples/weboperator-host runs when Chrome starts it):
//
//	conn, err := nativemsg.OpenStdio(nil) // Chrome's port
//	if err != nil { ... }
//	host := agentproto.NewHost(conn, nil)
//	srv := agentproto.NewServer(&agentproto.ServerOptions{Extension: host, Token: token})
//	l, err := agentproto.ListenUnix(ctx, socketPath) // 0600 from birth
//	if err != nil { ... }
//	go func() {
//		if err := srv.Serve(l); !errors.Is(err, agentproto.ErrServerClosed) { ... }
//	}()
//	err = host.Run(ctx) // until the extension disconnects
//	srv.Shutdown(context.Background())
//
// Nothing in the package reads the environment by itself: [DialEnv] and
// [ConfigFromEnv] read the reference's WEBOPERATOR_* variables when a
// program asks them to ([PlatformSocketPath] is the default path).
//
// The Examples run these on real sockets and pipes: [Server.Serve] with
// [Dial], [NewHost] over [nativemsg.Pipe]. For tests, package
// [github.com/agentbridge/agentbridge/agentproto/agentprototest] has a
// scriptable stand-in extension, an in-memory listener and a whole
// in-memory bridge.
//
// # Behaviour
//
// The server checks the token first (constant time; keys matched exactly,
// so {"Token":…} or a non-string token is no token, and a member named
// twice is refused, with the request's id when exactly one is readable), answers bridge.health
// itself, and forwards everything else to its [Extension]. Ids are echoed
// exactly as sent; a request without one gets a generated UUID. Payloads
// and results are relayed byte for byte, unknown fields included. A request
// times out after its timeoutMs (60 s when missing or 0) with "Bridge
// request timed out: <type>"; a late answer is dropped. The exact error
// strings are the Msg constants ([MsgUnauthorized], [MsgTimeoutPrefix], …);
// [RemoteError.Is] maps them to the Err sentinels.
//
// [Client.Call] relays any result; the typed methods ([Client.Snapshot],
// [Client.Click], [Client.GetTask], …) check theirs: a wrong "kind", a
// missing member or null where a value is needed is an error matching
// [ErrInvalidResult], never an empty value, and a task that does not
// exist is [ErrNoTask]. A program that embeds a [Host] waits for the
// extension with [Host.WaitOnline].
//
// # Limits
//
// Request frames: [DefaultMaxRequestSize] (4 MiB; beyond it the connection
// is answered and closed). Frames to the extension: 1 MiB, Chrome's limit
// (beyond it the request is refused with [ErrRequestTooLarge] and the link
// stays up). Requests in flight per connection: [DefaultMaxInFlight].
// Connections: [DefaultMaxConnections], of which at most
// [DefaultMaxUnauthConnections] (64) have not sent an authenticated request
// (beyond it the oldest of those is closed with an error frame; the rest is
// a reserve for agents with the token); a connection with no authenticated
// request within [DefaultAuthTimeout] (10 s) is closed with an error frame,
// so a client that only listens to events sends one first, such as
// bridge.health. Bytes queued for a client that does
// not read: [DefaultMaxQueuedBytes], after which it is disconnected so that
// it cannot hold the others up; bytes queued for all clients together
// (socket clients and HTTP event streams, writes in progress included):
// [DefaultMaxTotalQueuedBytes], beyond which the slowest client (the one
// that has gone longest without reading while bytes waited for it) is
// disconnected first. Client frames: [DefaultMaxResponseSize]
// read; requests over ClientOptions.MaxRequestSize ([DefaultMaxRequestSize])
// are refused before they are written. [Server.Serve] retries failed
// accepts (EMFILE and the like) with backoff. [NewHTTPServer] closes
// keep-alive connections idle for [DefaultHTTPIdleTimeout], gives each
// write [DefaultHTTPWriteTimeout] to make progress, and keeps at most
// [DefaultMaxUnauthHTTPConns] connections that are not serving an
// authenticated request, in any state.
// A tool result's [ToolResult.Text] (the reference MCP server's text:
// JSON as JavaScript's JSON.stringify writes it) is indented only 64
// levels deep (deeper containers are written compactly) and stops at
// 16 MiB with a line saying how many of the result's bytes were left out:
// a deeply nested result costs the size of its text, never the square of
// its depth; reordering objects as JavaScript orders their members copies
// at most four times the result's size (beyond that, the result's own
// order is kept). [ToolResult.Structured] carries results at most 990
// levels deep (the go-sdk refuses messages nested 1,000 deep). Tool
// arguments are at most 1 MiB, Chrome's limit. weboperator_execute_goal
// waits at most CallToolOptions.MaxGoalTimeout ([DefaultMaxGoalTimeout],
// 1 h); a cancelled one stops its task within 5 s. Every limit is checked before
// allocating.
//
// The rest of the defaults, each set by the option named: an oversized
// request frame is answered with an error frame naming the limit, read away
// for at most 2 s, and its connection closed; a [Client]'s oversized request
// is a [*RequestSizeError] and the connection is kept. A frame from the
// extension over nativemsg's 64 MiB closes the link, failing every pending
// request. [ServerOptions].AuthTimeout may be negative (no bound), for
// agents that rely on the reference's tokenless events. An HTTP event
// stream counts its queued bytes as a socket client does and holds at most
// [DefaultStreamBuffer] (256) events of its task; the client furthest behind
// is the one disconnected by the total budget, once, with the log line
// "disconnecting the slowest client", and a client that is reading is never
// picked for a large write it is still taking. Failed accepts are retried
// after 5 ms, doubling to 1 s; Serve returns only for a closed listener or
// a permanent error. The HTTP API reads POST bodies of at most
// [DefaultMaxBodySize] (1 MiB; beyond, 413). [NewHTTPServer] reads request
// headers within [DefaultHTTPReadHeaderTimeout] (10 s) and of at most
// [DefaultHTTPMaxHeaderBytes] (64 KiB; beyond, 431), and a request body
// within that timeout again (lifted once the body is read, so waits and
// event streams are not cut); it answers a refused request (no token, a
// foreign Host or Origin) and /health without reading the body they
// announce, and closes the connection. [CallTool] takes arguments of at most
// [MaxToolArgumentsSize] (1 MiB), valid against the tool's schema, or sends
// nothing ([*ToolArgumentsError]); each command it sends is bounded by ctx,
// else [DefaultToolTimeout] (30 s; [DefaultNavigateToolTimeout] for
// browser_navigate), and weboperator_execute_goal waits for its timeoutMs,
// else [DefaultGoalTimeout] (120 s), at most [MaxGoalTimeout] (1 h).
//
// # Concurrency
//
// Client, [Server] and [Host] are safe for concurrent use; each connection has
// one reading and one writing goroutine, and Close waits for them. Many
// calls may be in flight on one [Client]. Writes are queued and batched, so
// a slow peer never blocks the goroutine answering others: a request or
// reply is written at once by the goroutine that makes it only as far as
// the socket takes it without waiting, and the writing goroutine writes
// the rest.
//
// # Security
//
// ListenUnix creates the socket with mode 0600 from the start (no window
// in which another user could connect), never replaces something it does
// not own, waits while a live server of the same user still holds the path
// ([ErrSocketInUse] when ctx ends first), and removes only its own socket. [Dial] checks by
// default that the server runs as the current user (peer credentials, on
// Linux, macOS and FreeBSD) before the token is sent, and refuses
// otherwise; elsewhere it refuses unless told to skip the check. The
// HTTP API requires the token, accepts only loopback Host headers, refuses
// foreign browser Origins and requires application/json bodies. No error or
// log message carries payload bytes or tokens.
package agentproto
