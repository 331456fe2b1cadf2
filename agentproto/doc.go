// Package agentproto is the client side of the WebOperator agent
// protocol: how a local agent program drives a person's browser through
// the WebOperator extension.
//
//	agent ──Client──▶ Unix socket ──▶ bridge (Server + Host) ──native messaging──▶ extension ──▶ tab
//
// It holds what an agent needs: the wire types (every command's params
// and result, [Request], [Response], [Event] and the typed events), the
// [Client] with its typed methods and [Dial], the protocol's errors and
// exact error strings, and [Config], the environment the browser passes
// on. The other parts of the protocol have their own packages:
//
//   - [github.com/agentbridge/agentbridge/agentproto/bridge]: the bridge
//     itself, the server on the agent socket and the native messaging host
//     that joins it to the extension;
//   - [github.com/agentbridge/agentbridge/agentproto/httpapi]: the
//     reference host's HTTP compatibility API, served from a bridge;
//   - [github.com/agentbridge/agentbridge/agentproto/tools]: the tool
//     catalogue of the reference MCP server, run through a [Caller];
//   - [github.com/agentbridge/agentbridge/agentproto/agentprototest]: a
//     stand-in extension and a whole bridge in memory, for tests.
//
// Frames are Chrome's native messaging frames (a uint32 little-endian
// length, then UTF-8 JSON). An agent sends
// {"id","type","payload","timeoutMs","token"} and gets {"id","result"} or
// {"id","error"}; events from the extension reach every connected agent as
// {"kind":"event","event":…}.
//
// # Quick start
//
//	c, err := agentproto.Dial(ctx, socketPath, &agentproto.ClientOptions{Token: token})
//	if err != nil { ... }
//	defer c.Close()
//	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
//	res, err := c.Click(ctx, agentproto.ClickParams{Ref: snap.Nodes[0].Ref})
//	if errors.Is(err, agentproto.ErrExtensionOffline) { ... }
//
// The package example runs this against a bridge in memory; the example of
// Dial is an agent for a real browser.
//
// Nothing in the package reads the environment by itself: [DialEnv] and
// [ConfigFromEnv] read the reference's WEBOPERATOR_* variables when a
// program asks them to ([PlatformSocketPath] is the default path).
//
// # Errors
//
// An error reply is a *[RemoteError] carrying the exact string the bridge or
// the extension sent. The strings are the Msg constants
// ([MsgUnauthorized], [MsgTimeoutPrefix], …), and [RemoteError.Is] maps
// them to the Err sentinels, so errors.Is(err, [ErrTimeout]) works for a
// timeout the bridge answered and for a ctx deadline alike. A request that
// carries no timeoutMs (and no ctx deadline) waits [DefaultTimeout] (60 s)
// at the bridge.
//
// [Client.Call] relays any result; the typed methods ([Client.Snapshot],
// [Client.Click], [Client.GetTask], …) check theirs: a wrong "kind", a
// missing member or null where a value is needed is an error matching
// [ErrInvalidResult], never an empty value, and a task that does not
// exist is [ErrNoTask].
//
// # Limits
//
// A Client reads frames up to [DefaultMaxResponseSize]
// (ClientOptions.MaxResponseSize) and refuses, before writing anything,
// requests over ClientOptions.MaxRequestSize ([DefaultMaxRequestSize],
// 4 MiB, the size a bridge reads), with a *[RequestSizeError]. A
// [Subscription] holds [DefaultEventBuffer] events for a slow reader and
// counts the ones it dropped. A bridge closes a connection that sends no
// authenticated request within 10 s, so a program that only listens to
// events sends one first, such as [Client.Health].
//
// # Concurrency
//
// A [Client] is safe for concurrent use, and many calls may be in flight on
// one. It has one reading and one writing goroutine, and Close waits for
// them. Writes are queued and batched: a request is written at once by the
// goroutine that makes it only as far as the socket takes it without
// waiting, and the writing goroutine writes the rest.
//
// # Security
//
// [Dial] checks by default that the server runs as the current user (peer
// credentials on Linux, macOS and FreeBSD; on Windows the peer process and
// the socket's owner) before the token is sent, and refuses otherwise
// ([ErrForeignPeer]);
// elsewhere it refuses unless told to skip the check. [ConfigFromEnv]
// refuses an HTTP host that is not a loopback address. No error message
// carries payload bytes or tokens.
package agentproto
