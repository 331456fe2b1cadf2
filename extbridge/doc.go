// Package extbridge is the WebSocket hub a Go CLI embeds so that a browser
// extension can connect to it: the CLI side of the extension bridge
// protocol.
//
// The extension (an MV3 service worker cannot listen) dials
// ws://127.0.0.1:52789/ws and authenticates with a shared token in its first
// frame. Through the hub the CLI then drives the user's real browser
// (Navigate, Click, Type, Read, Screenshot, Tabs, Command), answers the
// extension panel's frames through a [Backend] (conversations, history,
// skills, models, mode), mirrors its chat as AG-UI events (Emit, RunTurn),
// asks the user for approvals (RequestApproval, ResolveApproval), serves the
// extension's tool requests ([ToolHandler]) and serves generated images under
// /artifacts/.
//
// # Quick start
//
//	token, err := extbridge.NewToken() // copy it into the extension's options
//	if err != nil { … }
//	hub, err := extbridge.NewHub(&extbridge.HubOptions{Token: token})
//	if err != nil { … }
//	defer hub.Close()
//	l, err := hub.Listen() // 127.0.0.1:52789; "address already in use" shows here
//	if err != nil { … }
//	go hub.Serve(l)
//
//	if err := hub.WaitConnected(ctx); err != nil { … }
//	res, err := hub.Navigate(ctx, "https://example.com")
//	fmt.Println(res.URL, res.Title)
//
// The [Hub] is also an http.Handler (routes /ws and /artifacts/) that can be
// mounted on a program's own mux.
//
// # Connections
//
// One extension connection is current at a time. The first frame must be a
// browser_hello with the right token within HelloTimeout; otherwise the hub
// closes with 1008 (policy violation). A newcomer that fails or stays silent
// never disturbs the current connection; a newly authenticated one replaces
// it, the replaced connection's in-flight commands fail at once with
// [ErrDisconnected], and whatever it still sends is ignored. Replacements are
// damped: beyond [HubOptions.ReplaceLimit] in [HubOptions.ReplaceWindow]
// (two browsers with the extension) the current connection is kept and
// newcomers are refused for [HubOptions.ReplaceCooldown];
// [ReplaceKeepCurrent] always keeps it. The hub pings every PingInterval
// and drops an extension silent for LivenessTimeout. The cause of a
// disconnect is kept: [*FrameTooLargeError], [*PeerClosedError], or the
// transport's error. Frames that are not JSON objects with a type, of
// unknown types, malformed, or not valid UTF-8 are ignored and the
// connection kept (a browser_result or tool_request with a readable id is
// answered: its command fails, the tool request gets a failed result).
// Browser commands are checked before they are sent ([ErrInvalidCommand]).
//
// # Limits
//
// Frames before the hello: PreHelloReadLimit (64 KiB); after it: ReadLimit
// (64 MiB, screenshots are megabytes of base64); a larger frame closes the
// connection with 1009. Outbound frames wait in a queue of SendQueue (256)
// frames; each write has a WriteTimeout (10 s) deadline and a stalled
// extension is dropped. At most MaxConcurrentTools (16) tool requests run
// at once per connection. Input history: 1000 entries of at most 64 KiB.
// Serve holds at most MaxUnauthConns (64) connections that have not
// authenticated, in any state (HTTP requests and keep-alive connections,
// WebSockets before their hello); beyond it a new one evicts the oldest
// idle one, else the oldest, so that the extension's reconnect always gets
// through. Each write of an HTTP answer must make progress within
// WriteTimeout (10 s). Idle HTTP connections close after IdleTimeout
// (30 s).
//
// # Concurrency
//
// All methods of Hub and [InputHistory] are safe for concurrent use. Each
// connection has one reader goroutine (the HTTP handler's), one writer and
// one pinger; each tool request runs in its own goroutine. A browser command
// is written by its caller when nothing is queued or being written (else
// queued for the writer), always behind the frames queued before it. Backend methods
// are called from the reader, one at a time, in frame order. OnConnect and
// OnDisconnect are called one at a time, in order, from a hub goroutine.
// Close and Shutdown wait for every goroutine the hub started; Close is
// idempotent.
//
// # Security
//
// The hub serves loopback peers only, and only requests whose Host names
// the loopback interface (a DNS-rebinding guard). The Origin must be absent
// or chrome-extension://, moz-extension:// or safari-web-extension:// with
// a well-formed id (pinned with ExtensionIDs); anything else gets 403
// before the upgrade. A missing Origin is accepted as the protocol says, so
// the token is the real guard: it is compared in constant time, an empty
// one is refused, and [NewToken] makes 128-bit random ones. Inbound frames are
// decoded strictly: duplicate and case-variant keys and invalid UTF-8 are
// refused, so the hub never acts on a field the extension's JavaScript
// reads differently, nor on text repaired to U+FFFD.
// Errors and logs never carry tokens or frame payloads. /artifacts/ is
// read-only, unauthenticated (the user's own files) and confined to
// ArtifactsDir by os.Root: "..", absolute paths and symbolic links leading
// out are refused, only regular files are opened (a FIFO cannot block a
// request), directories are not listed, and files are served with
// nosniff and a sandboxing Content-Security-Policy. The extension's read
// redaction is the extension's: treat page text as untrusted.
package extbridge
