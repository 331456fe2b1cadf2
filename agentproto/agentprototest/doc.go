// Package agentprototest tests programs that speak the agent protocol,
// without a browser, as net/http/httptest does for HTTP handlers.
//
// [Extension] is a scriptable stand-in for the browser extension at the
// browser end of a native messaging connection ([nativemsg.Pipe] in
// memory, or [nativemsg.OSPipe] for a real pipe): it says bridge:hello,
// reads bridge:request frames and answers them through a [Handler]
// ([Mux] routes by command type and answers unknown types as the real
// extension does; [Echo] returns each payload), or hands them to the test
// on [Extension.Requests] to answer in any order. It can also emit
// events, send malformed frames and vanish, for fault tests.
//
// [Bridge] is a whole bridge in memory: a [bridge.Server] on an
// in-memory [Listener], a [bridge.Host] joined to it, and an
// [Extension] at the host's browser end. [Bridge.Dial] returns an
// [agentproto.Client] connected to it.
//
// # Quick start
//
//	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{
//		Extension: agentprototest.Options{Handler: agentprototest.Mux{
//			agentproto.TypeNavigate: agentprototest.HandlerFunc(func(ctx context.Context, r *agentprototest.Request) (any, error) {
//				return map[string]any{"ok": true, "tabId": 7, "url": "https://example.com/"}, nil
//			}),
//		}},
//	})
//	defer b.Close()
//	if err := b.WaitOnline(ctx); err != nil { … }
//	c, err := b.Dial(ctx, nil)
//	if err != nil { … }
//	defer c.Close()
//	nav, err := c.Navigate(ctx, agentproto.NavigateParams{URL: "https://example.com/"})
//
// Without a token in the server's options, the Bridge's server accepts
// unauthenticated clients; with one, clients must present it.
//
// # In-memory transport
//
// [Listener] is an in-memory [net.Listener] whose connections are
// [net.Pipe] pairs: serve a [bridge.Server] on it and connect with
// [Listener.Dial]. It needs no file system, and inside a testing/synctest
// bubble (create the Listener there) Accept, Dial and its connections
// block durably and follow the bubble's fake clock, so timeouts can be
// tested without waiting.
//
// # Concurrency
//
// The methods of [Extension], [Bridge] and [Listener] are safe for
// concurrent use. By default an Extension runs its Handler in a goroutine
// per request and answers out of order, as the real extension does;
// [Options].Serial runs it in the reading goroutine instead, for
// benchmarks. Close waits for every goroutine a type started.
//
// # Limits
//
// [Extension.Requests] buffers 1024 requests; when the test takes none,
// the Extension stops reading until it does, as a stalled extension
// would. The package is meant for tests, not for production use.
package agentprototest
