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
//	token := extbridge.NewToken() // copy it into the extension's options
//	hub, err := extbridge.NewHub(token, nil)
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
// A CLI with a chat panel passes its [Backend] in [HubOptions]. The Backend
// is built first and never holds the Hub: its list methods return what the
// hub sends, and [Backend.UserMessage] answers through the [Reply] that
// comes with each message:
//
//	func (b *myBackend) UserMessage(ctx context.Context, m extbridge.UserMessage, reply *extbridge.Reply) error {
//		conv := b.conversation(m.ThreadID) // protocol 2 names it; classic panels follow the CLI's
//		return reply.StartTurn(conv, b.newID(), func(ctx context.Context, t *extbridge.Turn) error {
//			if err := t.Echo(ctx, b.newID(), m.Content); err != nil {
//				return err
//			}
//			return t.Say(ctx, b.newID(), b.agent.Answer(ctx, m.Content))
//		})
//	}
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
// newcomers are refused with 1008 "another browser is connected" for as
// long as it stays connected, which ends the flapping; once it ends, the
// next newcomer is accepted. [ReplaceKeepCurrent] always keeps it. The hub pings every PingInterval
// and drops an extension silent for LivenessTimeout. The cause of a
// disconnect is kept: [*FrameTooLargeError], [*PeerClosedError], or the
// transport's error. Frames that are not JSON objects with a type, of
// unknown types, malformed, or not valid UTF-8 are ignored and the
// connection kept (a browser_result or tool_request with a readable id is
// answered: its command fails, the tool request gets a failed result).
// Browser commands are checked before they are sent ([ErrInvalidCommand]).
//
// # Dialects
//
// The hub speaks two dialects of the protocol, chosen per connection by the
// hello's protocol_version, and one hub serves both: a hello without it
// (or below 2, or not an integer) is the classic dialect, acked with exactly
// {"type":"browser_hello_ack"} (a version 1 hello gets protocol_version 1
// back); 2 is protocol 2, the infer CLI's daemon binding dialect the newest
// opentask extension speaks; a higher number is served as the highest the
// hub speaks ([MaxProtocolVersion]), which the ack names, so that such an
// extension shows its "update" state instead of failing. [ConnInfo] tells
// the dialect. One [Backend] serves both, and the hub translates:
//
//   - chat: [Hub.Emit] wraps events in chat_event frames for classic
//     extensions and sends bare AG-UI 1.0 events in protocol 2;
//     [Hub.RunTurn] ends a cancelled turn with RUN_FINISHED outcome
//     {"type":"cancelled"} (plus the interrupted frame for classic panels)
//     and a failed one with a RUN_ERROR naming the run; threadID is the
//     conversation id, which protocol-2 panels adopt as active.
//   - panel messages: classic user_message and protocol 2's run_agent_input
//     (string or text and image content parts) both reach
//     [Backend.UserMessage]; the panel shows the user's own message only
//     when echoed back ([Hub.Say] with role "user").
//   - snapshots: conversation_snapshot, or MESSAGES_SNAPSHOT with AG-UI
//     messages (ids, camelCase toolCalls / toolCallId / error).
//   - scoping: protocol 2's project_dir reaches the Backend and the
//     [ToolHandler] as [ProjectDir](ctx); new_session's thread options as
//     [SessionOptions].
//   - approvals: [Hub.RequestApproval] and [Turn.RequestApproval] send an
//     approval_request frame, or in protocol 2 suspend the run
//     (TOOL_CALL_START/ARGS/END, then RUN_FINISHED with an interrupt
//     outcome); a run_agent_input resume answers it and the turn continues
//     as a new run. A tool request's approval is a CUSTOM approval_request
//     event to the requester, answered by approval_response {tool_call_id,
//     approved}, cleared by a CUSTOM approval_resolved. [Turn.RequestInput]
//     asks a question (an input_required interrupt in protocol 2). Panel and
//     terminal ([Hub.ResolveApproval], [Hub.ResolveInput]): first answer
//     wins.
//   - artifacts: GET /artifacts/<project-slug>/<path> from
//     [HubOptions.ProjectsDir] beside the classic /artifacts/<path>.
//
// Every event the hub sends on a protocol-2 connection passes @ag-ui/core
// 1.0's schemas, which the extension validates each frame with (its tests
// check them with the npm package's own validator).
//
// # Limits
//
// Frames before the hello: PreHelloReadLimit (64 KiB); after it: ReadLimit
// (64 MiB, screenshots are megabytes of base64); a larger frame closes the
// connection with 1009. Outbound frames wait in a queue of SendQueue (256)
// frames; each write has a WriteTimeout (10 s) deadline and a stalled
// extension is dropped; an extension that does not answer the close frame
// within WriteTimeout has its socket closed. At most MaxConcurrentTools (16) tool requests run
// at once per connection. Input history: 1000 entries of at most 64 KiB
// (the history frame carries at most the last 1000), of which a history
// file's last 8 MiB are read.
// Protocol 2: project_dir must be absolute and at most 4096 bytes (else a
// RUN_ERROR without runId answers the frame, as the reference CLI does);
// at most 16 user messages and 256 resume entries of one run_agent_input
// are read.
// Serve holds at most MaxUnauthConns (64) connections that have not
// authenticated, in any state (HTTP requests and keep-alive connections,
// WebSockets before their hello); beyond it a new one evicts the oldest
// idle one, else the oldest, so that the extension's reconnect always gets
// through. Each WebSocket holds an 8 KiB buffer of its own for the reading
// turn's frame gate (at most 512 KiB over 64 unauthenticated ones). Each write of an HTTP answer must make progress within
// WriteTimeout (10 s). Idle HTTP connections close after IdleTimeout
// (30 s); request headers must arrive within 10 s and hold at most 16 KiB.
//
// The other defaults, each a HubOptions field with a Default constant:
// Addr 127.0.0.1:52789, loopback only ([NewHub], [Hub.Listen] and
// [Hub.Serve] refuse any other address); HelloTimeout 5 s; PingInterval
// 20 s and LivenessTimeout 60 s; ReplaceLimit 3 replacements in
// ReplaceWindow 10 s. A browser command without a context deadline is sent
// with CommandTimeout (30 s) and waited for ReplyMargin (5 s) longer.
// Navigate takes only absolute URLs of NavigateSchemes (default http,
// https, file, about, data); Click and Type need a selector. A tool
// request's approval waits ToolApprovalTimeout (5 min). An [InputHistory]
// reads at most the last 8 MiB of its file and
// writes it with mode 0600. /artifacts/ answers GET and HEAD only.
//
// # Concurrency
//
// All methods of Hub and [InputHistory] are safe for concurrent use. Each
// connection has one reader at a time, one writer and one pinger; each tool
// request and each reply turn ([Reply.StartTurn]) runs in its own goroutine.
// The reader is the HTTP handler's goroutine, except when nobody reads
// (after a result, no command pending, nothing buffered, and a socket that
// takes read deadlines, which interrupt it): the next browser command's
// caller then reads its own result, and hands any other frame, and the
// reading, back to the handler's goroutine; a frame that arrives while
// nobody reads is read within 1 ms. A browser command is written by its
// caller when nothing is queued or being written (else queued for the
// writer), always behind the frames queued before it. Backend methods are
// called from the handler's goroutine, one at a time, in frame order.
// OnConnect and OnDisconnect are called one at a time, in order, from a hub
// goroutine.
// Close and Shutdown wait for every goroutine the hub started, reply turns
// included; Close is idempotent.
//
// # Shutdown
//
// [Hub.Shutdown] is graceful as net/http's is: it refuses new connections,
// the turns of new panel messages and the calls made outside a running
// turn ([ErrClosed]), and lets every running turn ([Reply.StartTurn],
// [Hub.RunTurn]) finish. The events and browser commands a turn makes with
// its context go on while its extension stays connected, and its
// RUN_FINISHED or RUN_ERROR reaches the panel, in either dialect, before
// the connection closes with 1001 (going away). Its approvals and
// questions fail at once with ErrClosed: they wait for a person, and a
// shutdown should not. When Shutdown's context ends first it falls back to
// [Hub.Close], which cancels the turns and waits for them.
//
// # Security
//
// The hub serves loopback peers only, and only requests whose Host names
// the loopback interface (a DNS-rebinding guard). The Origin must be absent
// or chrome-extension://, moz-extension:// or safari-web-extension:// with
// a well-formed id (pinned with ExtensionIDs); anything else gets 403
// before the upgrade. A missing Origin is accepted as the protocol says, so
// the token is the real guard: it is compared in constant time, one shorter
// than 16 bytes is refused ([ErrWeakToken]), and [NewToken] makes 128-bit
// random ones. Inbound frames are
// decoded strictly: duplicate and case-variant keys and invalid UTF-8 are
// refused, so the hub never acts on a field the extension's JavaScript
// reads differently, nor on text repaired to U+FFFD.
// Errors and logs never carry tokens or frame payloads. /artifacts/ is
// read-only, unauthenticated (the user's own files) and confined to
// ArtifactsDir, or to one project's artifacts folder under ProjectsDir, by
// os.Root: "..", absolute paths and symbolic links leading
// out are refused, only regular files are opened (a FIFO cannot block a
// request), directories are not listed, and files are served with
// nosniff and a sandboxing Content-Security-Policy. The extension's read
// redaction is the extension's: treat page text as untrusted.
package extbridge
