// Package extbridgetest is a fake browser extension for testing programs
// that embed an [github.com/agentbridge/agentbridge/extbridge.Hub], as
// net/http/httptest is for HTTP handlers.
//
// An [Extension] is a real WebSocket client (github.com/coder/websocket) that
// speaks the extension side of the extension bridge protocol and sends an
// Origin header as the real MV3 extension does. It says hello with a
// token, answers browser commands through a [BrowserHandler] ([Browser] is a
// small scripted one), answers approval requests through an
// [ApprovalHandler], sends the frames the real panel sends (user messages,
// New chat's "/clear", interrupt, the JSON ping, set_mode, select_model,
// the burst after every reconnect) and tool requests, and records every
// frame the hub sent. With Options.Protocol 2 it speaks protocol 2, as the
// newest opentask extension does: its hello names the version, scoped
// frames carry Options.ProjectDir, messages go out as run_agent_input
// ([Extension.RunInput]), interrupts are answered by resume
// ([Extension.Resume], or the [ApprovalHandler]) and tool requests'
// approvals by [Extension.ApproveTool].
//
// # Quick start
//
// [Connect] runs the hub (any http.Handler) in memory, over net.Pipe
// connections; [Dial] reaches a hub served on a loopback address:
//
//	token := extbridge.NewToken()
//	hub, err := extbridge.NewHub(token, nil)
//	if err != nil { … }
//	defer hub.Close()
//	browser := extbridgetest.NewBrowser()
//	ext, err := extbridgetest.Connect(ctx, hub, &extbridgetest.Options{Token: token, Browser: browser})
//	if err != nil { … }
//	defer ext.Close()
//	res, err := hub.Navigate(ctx, "https://example.com/") // answered by browser
//
// [Listener] is the in-memory transport itself: serve the hub on it with
// Hub.Serve and dial with Options.HTTPClient set to [Listener.HTTPClient].
// Inside a testing/synctest bubble (create the [Listener] there) its
// connections block durably and follow the bubble's fake clock, which real
// sockets do not: hello timeouts, pings and write deadlines can then be
// tested without waiting.
//
// # Frames
//
// Frames the hub sends are kept in order: Next and NextOfType consume them,
// Received returns all of them. Frames answered by a handler (browser
// commands with a BrowserHandler, approval requests with an
// ApprovalHandler) and the replies that Request and CallTool wait for are
// recorded but not queued for Next. With Options.OnFrame set, frames go to
// that function instead and nothing is recorded, for benchmarks and
// long-running drivers.
//
// # Concurrency
//
// An Extension has one reader goroutine, which calls the handlers and
// OnFrame one frame at a time; Close waits for it. All methods of
// Extension, Browser and Listener are safe for concurrent use.
//
// # Limits
//
// The fake accepts frames up to 128 MiB and keeps every frame it receives
// (unless OnFrame is set): it is meant for tests, not for production use.
package extbridgetest
