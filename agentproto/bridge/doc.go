// Package bridge is the bridge of the WebOperator agent protocol: the
// program the browser starts, which serves agents on a Unix socket and
// relays their requests to the WebOperator extension over native
// messaging.
//
//	agent ──agentproto.Client──▶ Unix socket ──▶ Server ──Extension──▶ Host ──native messaging──▶ extension
//
// A [Server] serves agents on stream listeners ([ListenUnix]): it checks
// their token, answers bridge.health itself, and forwards every other
// request to its [Extension]. A [Host] is the Extension that joins the
// server to the browser extension at the other end of a native messaging
// connection; [ExtensionFunc] adapts a function, for a bridge without a
// browser. Events the extension emits reach every connected agent. The
// client, the wire types and the protocol's errors are in package
// [agentproto]; package [github.com/agentbridge/agentbridge/agentproto/httpapi]
// serves the same server over HTTP.
//
// # Quick start
//
// What examples/weboperator-host runs when Chrome starts it:
//
//	conn, err := nativemsg.OpenStdio(nil) // Chrome's port
//	if err != nil { ... }
//	host := bridge.NewHost(conn, nil)
//	srv := bridge.NewServer(&bridge.ServerOptions{Extension: host, Token: token})
//	l, err := bridge.ListenUnix(ctx, socketPath) // 0600 from birth
//	if err != nil { ... }
//	go func() {
//		if err := srv.Serve(l); !errors.Is(err, bridge.ErrServerClosed) { ... }
//	}()
//	err = host.Run(ctx) // until the extension disconnects
//	srv.Shutdown(context.Background())
//
// Nothing in the package reads the environment by itself: "" in
// [ListenUnix] is [agentproto.PlatformSocketPath](), and
// [agentproto.ConfigFromEnv] reads the reference's WEBOPERATOR_* variables
// when a program asks it to.
//
// The Examples run this on real sockets and pipes. For tests, package
// [github.com/agentbridge/agentbridge/agentproto/agentprototest] has a
// scriptable stand-in extension, an in-memory listener and a whole
// in-memory bridge.
//
// # Behaviour
//
// The server checks the token first (constant time; keys matched exactly,
// so {"Token":…} or a non-string token is no token, and a member named
// twice is refused, with the request's id when exactly one is readable),
// answers bridge.health
// itself, and forwards everything else to its [Extension]. Ids are echoed
// exactly as sent; a request without one gets a generated UUID. Payloads
// and results are relayed byte for byte, unknown fields included. A request
// times out after its timeoutMs ([agentproto.DefaultTimeout], 60 s, when
// missing or 0) with "Bridge request timed out: <type>"; a late answer is
// dropped. Its answers are the protocol's exact strings
// ([agentproto.MsgUnauthorized], …). [Server.Serve] retries failed accepts
// (EMFILE and the like) with backoff and returns [ErrServerClosed] after
// [Server.Shutdown] or [Server.Close]. A program that embeds a [Host]
// waits for the extension with [Host.WaitOnline].
//
// # Limits
//
// Request frames: [agentproto.DefaultMaxRequestSize] (4 MiB; beyond it the
// connection is answered and closed). Frames to the extension: 1 MiB,
// Chrome's limit (beyond it the request is refused with
// [agentproto.ErrRequestTooLarge] and the link stays up); request bytes
// waiting for the extension: [DefaultMaxLinkQueue]. Requests in flight per
// connection: [DefaultMaxInFlight]. Connections: [DefaultMaxConnections],
// of which at most [DefaultMaxUnauthConnections] (64) have not sent an
// authenticated request (beyond it the oldest of those is closed with an
// error frame; the rest is a reserve for agents with the token); a
// connection with no authenticated request within [DefaultAuthTimeout]
// (10 s) is closed with an error frame. Bytes queued for a client that does
// not read: [DefaultMaxQueuedBytes], after which it is disconnected so that
// it cannot hold the others up; bytes queued for all clients together
// (socket clients and HTTP event streams, writes in progress included):
// [DefaultMaxTotalQueuedBytes], beyond which the slowest client (the one
// that has gone longest without reading while bytes waited for it) is
// disconnected first. Every limit is checked before allocating.
//
// The rest of the defaults, each set by the option named: an oversized
// request frame is answered with an error frame naming the limit, read away
// for at most 2 s, and its connection closed. A frame from the extension
// over nativemsg's 64 MiB closes the link, failing every pending request.
// [ServerOptions].AuthTimeout may be negative (no bound), for agents that
// rely on the reference's tokenless events. The client furthest behind is
// the one disconnected by the total budget, once, with the log line
// "disconnecting the slowest client", and a client that is reading is never
// picked for a large write it is still taking. Failed accepts are retried
// after 5 ms, doubling to 1 s; Serve returns only for a closed listener or
// a permanent error.
//
// # Concurrency
//
// [Server] and [Host] are safe for concurrent use; each connection has one
// reading and one writing goroutine, and Close waits for them. Writes are
// queued and batched, so a slow peer never blocks the goroutine answering
// others: a reply is written at once by the goroutine that makes it only as
// far as the socket takes it without waiting, and the writing goroutine
// writes the rest. An [Extension]'s Forward must not block for long: the
// server calls it from the connection's reading goroutine.
//
// # Security
//
// [ListenUnix] creates the socket with mode 0600 from the start (no window
// in which another user could connect), never replaces something it does
// not own, waits while a live server of the same user still holds the path
// ([ErrSocketInUse] when ctx ends first), and removes only its own socket.
// A [Host] refuses to serve a
// caller origin outside [HostOptions].AllowedOrigins. A server without a
// token refuses every request unless
// [ServerOptions].AllowUnauthenticated is set. No error or log message
// carries payload bytes or tokens.
package bridge
