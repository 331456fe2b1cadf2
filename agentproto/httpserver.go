package agentproto

import (
	"container/list"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of [NewHTTPServer].
const (
	// DefaultHTTPIdleTimeout is how long an HTTP connection may wait
	// between requests before the server closes it.
	DefaultHTTPIdleTimeout = 60 * time.Second
	// DefaultHTTPReadHeaderTimeout is how long a client may take to send
	// a request's headers.
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	// DefaultMaxIdleHTTPConns is the default limit of connections with no
	// request in progress (new ones that have not sent a request yet, and
	// keep-alive ones between requests) that one HTTP server keeps open.
	DefaultMaxIdleHTTPConns = 64
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
	// MaxIdleConns limits the connections of the server that have no
	// request in progress. When one more arrives, the one idle for the
	// longest is closed. Zero means [DefaultMaxIdleHTTPConns].
	MaxIdleConns int
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
//   - at most MaxIdleConns connections without a request in progress stay
//     open (the oldest is closed when another arrives), so idle
//     connections can never use up the process's file descriptors and
//     lock out the agent socket or a client with a real request.
//
// Connections serving a request (event streams included) are not
// counted. The server's limits hold for all the listeners it serves
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
	idle := &idleConns{max: orDefault(o.MaxIdleConns, DefaultMaxIdleHTTPConns), log: log, elems: map[net.Conn]*list.Element{}}
	readHeader := orDefault(o.ReadHeaderTimeout, DefaultHTTPReadHeaderTimeout)
	return &http.Server{
		Handler:           bodyDeadline{handler, readHeader},
		IdleTimeout:       orDefault(o.IdleTimeout, DefaultHTTPIdleTimeout),
		ReadHeaderTimeout: readHeader,
		MaxHeaderBytes:    orDefault(o.MaxHeaderBytes, DefaultHTTPMaxHeaderBytes),
		ConnState:         idle.track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// idleConns keeps the connections without a request in progress, oldest
// first, and closes the oldest beyond max.
type idleConns struct {
	max int
	log *slog.Logger

	mu     sync.Mutex
	order  list.List // of net.Conn
	elems  map[net.Conn]*list.Element
	warned bool
}

func (ic *idleConns) track(nc net.Conn, state http.ConnState) {
	var evict net.Conn
	ic.mu.Lock()
	if e, ok := ic.elems[nc]; ok {
		ic.order.Remove(e)
		delete(ic.elems, nc)
	}
	if state == http.StateNew || state == http.StateIdle {
		ic.elems[nc] = ic.order.PushBack(nc)
		if ic.order.Len() > ic.max {
			e := ic.order.Front()
			evict = ic.order.Remove(e).(net.Conn)
			delete(ic.elems, evict)
		}
	}
	warn := evict != nil && !ic.warned
	if warn {
		ic.warned = true
	}
	ic.mu.Unlock()
	if evict != nil {
		if warn {
			ic.log.Warn("agentproto: too many idle HTTP connections; closing the oldest ones", "limit", ic.max)
		}
		evict.Close()
	}
}

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
