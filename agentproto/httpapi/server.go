package agentproto

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentbridge/agentbridge/internal/connguard"
)

// Defaults of [NewHTTPServer].
const (
	// DefaultHTTPIdleTimeout is how long an HTTP connection may wait
	// between requests before the server closes it.
	DefaultHTTPIdleTimeout = 60 * time.Second
	// DefaultHTTPReadHeaderTimeout is how long a client may take to send
	// a request's headers.
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	// DefaultHTTPWriteTimeout is how long each write of a response may
	// wait for the client to take bytes.
	DefaultHTTPWriteTimeout = 10 * time.Second
	// DefaultMaxUnauthHTTPConns is the default limit of connections of
	// one HTTP server that are not serving an authenticated request: new
	// ones that have sent nothing, ones serving a request without a valid
	// token (health, refusals), and keep-alive ones between requests.
	DefaultMaxUnauthHTTPConns = 64
	// DefaultHTTPMaxHeaderBytes bounds a request's headers (64 KiB; a
	// request of this API carries a token and a few short headers), in
	// place of net/http's 1 MiB: every connection still reading its
	// headers holds that much memory.
	DefaultHTTPMaxHeaderBytes = 64 << 10
)

// HTTPServerOptions configures [NewHTTPServer]. The zero value of each
// field is its documented default.
type HTTPServerOptions struct {
	// IdleTimeout closes keep-alive connections idle for that long. Zero
	// means [DefaultHTTPIdleTimeout].
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds the time to read a request's headers.
	// Zero means [DefaultHTTPReadHeaderTimeout].
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that takes
	// no bytes for that long loses its connection. It is set before each
	// write, not for the whole response, so that an event stream or a
	// long wait is not cut. Zero means [DefaultHTTPWriteTimeout].
	WriteTimeout time.Duration
	// MaxUnauthConns limits the connections of the server that are not
	// serving an authenticated request (see [HTTPAuthenticated]), in
	// any state. When one more arrives, the one idle for the longest is
	// closed, else the oldest. Zero means [DefaultMaxUnauthHTTPConns].
	MaxUnauthConns int
	// MaxHeaderBytes bounds a request's headers; larger ones are answered
	// 431. Zero means DefaultHTTPMaxHeaderBytes.
	MaxHeaderBytes int
	// Logger receives the server's diagnostics. Nil means none.
	Logger *slog.Logger
}

// NewHTTPServer returns an *http.Server for handler (such as
// [Server.HTTPHandler]) with the limits a local API needs against other
// local processes, which can open connections without any token:
//
//   - keep-alive connections are closed after IdleTimeout;
//   - headers are at most MaxHeaderBytes;
//   - headers must arrive within ReadHeaderTimeout, and a request's body
//     within ReadHeaderTimeout more (net/http otherwise waits for the body
//     of a request answered without reading it, with no deadline);
//   - each write of a response must make progress within WriteTimeout, so
//     that a client that sends requests and never reads the answers
//     cannot hold a connection for ever;
//   - at most MaxUnauthConns connections that are not serving an
//     authenticated request stay open, whatever their state (the idle one
//     is closed first, else the oldest, when another arrives), so that
//     connections without a token can never use up the process's file
//     descriptors and lock out the agent socket, and the rest are a
//     reserve for clients with the token: a new one is always admitted,
//     and no longer counts once [HTTPAuthenticated] marks its request.
//
// [Server.HTTPHandler] marks its authorized requests itself; another
// handler calls [HTTPAuthenticated] once it has checked a request's
// credentials. The server's limits hold for all the listeners it serves
// together. opts may be nil.
func NewHTTPServer(handler http.Handler, opts *HTTPServerOptions) *http.Server {
	var o HTTPServerOptions
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	readHeader := orDefault(o.ReadHeaderTimeout, DefaultHTTPReadHeaderTimeout)
	srv := &http.Server{
		Handler:           bodyDeadline{handler, readHeader},
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultHTTPIdleTimeout),
		ReadHeaderTimeout: readHeader,
		MaxHeaderBytes:    orDefault(o.MaxHeaderBytes, DefaultHTTPMaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	connguard.New(connguard.Options{
		MaxUnauth:    orDefault(o.MaxUnauthConns, DefaultMaxUnauthHTTPConns),
		WriteTimeout: orDefault(o.WriteTimeout, DefaultHTTPWriteTimeout),
		Logger:       log,
		Name:         "agentproto",
	}).Install(srv)
	return srv
}

// HTTPAuthenticated tells the server made by [NewHTTPServer] that r
// carries valid credentials: while r is served, its connection does not
// count against HTTPServerOptions.MaxUnauthConns. A handler calls it once
// it has checked r's token; it does nothing for requests served by other
// servers.
func HTTPAuthenticated(r *http.Request) { connguard.Authenticate(r) }

// bodyDeadline gives a request's body timeout to arrive: a handler that
// answers without reading it (a refusal) would otherwise make net/http wait
// for it with no deadline, before and after the answer, and a local
// process could hold connections that way, out of reach of the idle cap.
// Once the body has been read to its end the deadline is lifted, so that a
// long request (a wait, an event stream) is not cut.
type bodyDeadline struct {
	h       http.Handler
	timeout time.Duration
}

func (b bodyDeadline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(b.timeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	b.h.ServeHTTP(w, r)
}

// deadlineBody lifts the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err == io.EOF && !d.lifted {
		d.lifted = true
		_ = d.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
