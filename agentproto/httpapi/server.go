package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/connguard"
)

// Defaults of [NewServer].
const (
	// DefaultIdleTimeout is how long an HTTP connection may wait
	// between requests before the server closes it.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultReadHeaderTimeout is how long a client may take to send
	// a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultWriteTimeout is how long each write of a response may
	// wait for the client to take bytes.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxUnauthConns is the default limit of connections of
	// one HTTP server that are not serving an authenticated request: new
	// ones that have sent nothing, ones serving a request without a valid
	// token (health, refusals), and keep-alive ones between requests.
	DefaultMaxUnauthConns = 64
	// DefaultMaxHeaderBytes bounds a request's headers (64 KiB; a
	// request of this API carries a token and a few short headers), in
	// place of net/http's 1 MiB: every connection still reading its
	// headers holds that much memory.
	DefaultMaxHeaderBytes = 64 << 10
)

// ServerOptions configures [NewServer]. The zero value of each
// field is its documented default.
type ServerOptions struct {
	// IdleTimeout closes keep-alive connections idle for that long. Zero
	// means [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds the time to read a request's headers.
	// Zero means [DefaultReadHeaderTimeout].
	ReadHeaderTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that takes
	// no bytes for that long loses its connection. It is set before each
	// write, not for the whole response, so that an event stream or a
	// long wait is not cut. Zero means [DefaultWriteTimeout].
	WriteTimeout time.Duration
	// MaxUnauthConns limits the connections of the server that are not
	// serving an authenticated request (see [Authenticated]), in
	// any state. When one more arrives, the one idle for the longest is
	// closed, else the oldest. Zero means [DefaultMaxUnauthConns].
	MaxUnauthConns int
	// MaxHeaderBytes bounds a request's headers; larger ones are answered
	// 431. Zero means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// Logger receives the server's diagnostics. Nil means none.
	Logger *slog.Logger
}

// NewServer returns an *http.Server for handler (such as
// [NewHandler]) with the limits a local API needs against other
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
//     and no longer counts once [Authenticated] marks its request.
//
// [NewHandler] marks its authorized requests itself; another
// handler calls [Authenticated] once it has checked a request's
// credentials. The server's limits hold for all the listeners it serves
// together. opts may be nil.
func NewServer(handler http.Handler, opts *ServerOptions) *http.Server {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	readHeader := wire.OrDefault(o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	srv := &http.Server{
		Handler:           bodyDeadline{handler, readHeader},
		IdleTimeout:       wire.OrDefault(o.IdleTimeout, DefaultIdleTimeout),
		ReadHeaderTimeout: readHeader,
		MaxHeaderBytes:    wire.OrDefault(o.MaxHeaderBytes, DefaultMaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	connguard.New(connguard.Options{
		MaxUnauth:    wire.OrDefault(o.MaxUnauthConns, DefaultMaxUnauthConns),
		WriteTimeout: wire.OrDefault(o.WriteTimeout, DefaultWriteTimeout),
		Logger:       log,
		Name:         "agentproto",
	}).Install(srv)
	return srv
}

// Authenticated tells the server made by [NewServer] that r
// carries valid credentials: while r is served, its connection does not
// count against ServerOptions.MaxUnauthConns. A handler calls it once
// it has checked r's token; it does nothing for requests served by other
// servers.
func Authenticated(r *http.Request) { connguard.Authenticate(r) }

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
