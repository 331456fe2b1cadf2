// Package httpapi serves a bridge over HTTP: the WebOperator reference
// host's HTTP compatibility API (GET /health, /v1/browser/…, /v1/tasks/…,
// /v1/tools), with the holes the reference leaves closed.
//
// [NewHandler] is the API of a [bridge.Server]: the same token, extension
// and events as its agent socket. [NewServer] wraps any handler in an
// *http.Server with the limits a local API needs against other local
// processes; a handler other than NewHandler's marks its authorized
// requests with [Authenticated].
//
// # Quick start
//
//	srv := bridge.NewServer(&bridge.ServerOptions{Extension: host, Token: token})
//	h := httpapi.NewHandler(srv, &httpapi.HandlerOptions{AllowedOrigins: []string{extensionOrigin}})
//	hs := httpapi.NewServer(h, nil)
//	l, err := net.Listen("tcp", "127.0.0.1:8765")
//	if err != nil { ... }
//	go hs.Serve(l)
//	defer hs.Shutdown(ctx)
//
// Then, for example: curl -H "Authorization: Bearer $WEBOPERATOR_API_TOKEN"
// http://127.0.0.1:8765/v1/browser/snapshot. [NewHandler] lists the routes.
//
// # Limits
//
// POST bodies: [DefaultMaxBodySize] (1 MiB, Chrome's limit on what reaches
// the extension; beyond, 413). An event stream holds [DefaultStreamBuffer]
// (256) events of its task for a
// slow reader, and its bytes count against the bridge server's
// MaxQueuedBytes and MaxTotalQueuedBytes as a socket client's do; it sends
// a heartbeat every [DefaultHeartbeat]. [NewServer] closes keep-alive
// connections idle for [DefaultIdleTimeout], reads headers (at most
// [DefaultMaxHeaderBytes], 64 KiB; beyond, 431) within
// [DefaultReadHeaderTimeout] (10 s) and a request body within that timeout
// again (lifted once the body is read, so waits and event streams are not
// cut), answers a refused request (no token, a foreign Host or Origin) and
// /health without reading the body they announce and closes the
// connection, gives each
// write [DefaultWriteTimeout] to make progress, and keeps at most
// [DefaultMaxUnauthConns] connections that are not serving an
// authenticated request, in any state. Tool calls run with the limits of
// package [tools].
//
// # Concurrency
//
// The handler and the server are safe for concurrent use, as any
// net/http handler; the bridge server's Shutdown ends the event streams,
// so shut it down before the HTTP server.
//
// # Security
//
// Unlike the reference, the API is secure by default: the token is
// required (Authorization: Bearer or X-WebOperator-Token; never in the
// query string) on everything but /health; only loopback Host headers are
// accepted, against DNS rebinding; browser Origins other than the allowed
// extensions are refused; OPTIONS preflights are refused; and a non-empty
// POST body must be application/json, so that a web page cannot send one
// without a CORS preflight. No error or log message carries payload bytes
// or tokens.
package httpapi
