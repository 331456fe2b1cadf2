// Package connguard guards the SDK's HTTP servers against local processes
// that open connections without any token: the agent HTTP API
// (httpapi.NewServer, and the MCP server's --http through it) and
// the extension hub (extbridge.Hub).
//
// A [Guard] installed on an *http.Server does two things:
//
//   - It bounds the connections that are not serving an authenticated
//     request, in every state: new ones that have sent nothing, ones reading
//     or answering a request without a valid token, keep-alive ones
//     between requests, and hijacked ones (WebSockets) before they
//     authenticate. When one more arrives (or an authenticated request
//     ends and its connection goes idle), the one idle for the longest is
//     closed, else the oldest by accept order. The rest of the process's
//     file descriptors stay for authenticated clients: a new client with
//     a token is always the newest connection, and once its request is
//     authenticated it no longer counts.
//   - It gives every write a deadline: each write of a response (and the
//     end of the response) must make progress within WriteTimeout, so that
//     a client that never reads cannot hold a connection and its
//     goroutine for ever. The deadline is set before each write, not for
//     the whole response: a long event stream is not cut.
//
// Handlers mark a request authenticated with [Authenticate] once its
// credentials are checked; a hijacked connection that authenticates later
// (a WebSocket's hello) is marked with [Guard.AuthenticateConn].
package connguard

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configures a [Guard].
type Options struct {
	// MaxUnauth bounds the connections not serving an authenticated
	// request. It must be positive.
	MaxUnauth int
	// WriteTimeout bounds each write to a connection. Zero means none.
	WriteTimeout time.Duration
	// Logger receives one warning the first time connections are closed
	// for the bound. Nil means none.
	Logger *slog.Logger
	// Name prefixes the warning ("agentproto", "extbridge").
	Name string
}

// Guard tracks the connections of one *http.Server. Its methods are safe
// for concurrent use.
type Guard struct {
	max          int
	writeTimeout time.Duration
	log          *slog.Logger
	name         string

	mu     sync.Mutex
	conns  map[net.Conn]*entry
	unauth int    // entries that count against max
	seq    uint64 // accept order
	warned bool
}

// entry is one tracked connection.
type entry struct {
	g     *Guard
	nc    net.Conn
	seq   uint64
	state http.ConnState
	// authed is set while the connection serves an authenticated request,
	// and for good once a hijacked connection authenticates.
	authed bool
	gone   bool // evicted or closed: no longer in g.conns
}

// New returns a Guard configured by o.
func New(o Options) *Guard {
	if o.MaxUnauth <= 0 {
		panic("connguard: MaxUnauth must be positive")
	}
	g := &Guard{max: o.MaxUnauth, writeTimeout: o.WriteTimeout, log: o.Logger, name: o.Name, conns: map[net.Conn]*entry{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g
}

// Install sets srv's hooks (ConnContext, ConnState, and Handler, which it
// wraps) for the guard. Hooks srv already has are kept and called first.
func (g *Guard) Install(srv *http.Server) {
	cc, cs := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if cc != nil {
			ctx = cc(ctx, nc)
		}
		return context.WithValue(ctx, entryKey{}, g.admit(nc))
	}
	srv.ConnState = func(nc net.Conn, state http.ConnState) {
		if cs != nil {
			cs(nc, state)
		}
		g.connState(nc, state)
	}
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = g.handler(next)
}

type entryKey struct{}

// admit tracks a connection just accepted, evicting one beyond the bound.
func (g *Guard) admit(nc net.Conn) *entry {
	e := &entry{g: g, nc: nc, state: http.StateNew}
	g.mu.Lock()
	g.seq++
	e.seq = g.seq
	g.conns[nc] = e
	g.unauth++
	victims := g.evictLocked()
	g.mu.Unlock()
	g.close(victims)
	return e
}

// evictLocked removes the connections beyond the bound, the longest idle
// first, else the oldest by accept order, and returns them for closing.
// A client's new connection goes through every state before it
// authenticates: ranking any of them below another would let a process
// that keeps connections in the lower state evict it with one new
// connection, while in accept order it takes MaxUnauth newer ones.
func (g *Guard) evictLocked() []net.Conn {
	var victims []net.Conn
	for g.unauth > g.max {
		var best *entry
		for _, e := range g.conns {
			if e.authed {
				continue
			}
			if best == nil || rank(e.state) < rank(best.state) || (rank(e.state) == rank(best.state) && e.seq < best.seq) {
				best = e
			}
		}
		if best == nil {
			break
		}
		g.removeLocked(best)
		victims = append(victims, best.nc)
	}
	return victims
}

func rank(state http.ConnState) int {
	if state == http.StateIdle {
		return 0
	}
	return 1
}

func (g *Guard) removeLocked(e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	delete(g.conns, e.nc)
	if !e.authed {
		g.unauth--
	}
}

func (g *Guard) close(victims []net.Conn) {
	if len(victims) == 0 {
		return
	}
	g.mu.Lock()
	warn := !g.warned
	g.warned = true
	g.mu.Unlock()
	if warn {
		g.log.Warn(g.name+": too many connections without an authenticated request; closing the oldest ones", "limit", g.max)
	}
	for _, nc := range victims {
		nc.Close()
	}
}

func (g *Guard) connState(nc net.Conn, state http.ConnState) {
	if state == http.StateActive && g.writeTimeout > 0 {
		// What net/http writes itself before a handler runs (an error
		// for a malformed request) has a deadline too.
		nc.SetWriteDeadline(time.Now().Add(g.writeTimeout))
	}
	g.mu.Lock()
	e := g.conns[nc]
	if e == nil {
		g.mu.Unlock()
		return
	}
	var victims []net.Conn
	switch state {
	case http.StateClosed:
		g.removeLocked(e)
	case http.StateIdle:
		// The authenticated request is over: between requests the
		// connection counts again.
		e.state = state
		if e.authed {
			e.authed = false
			g.unauth++
			victims = g.evictLocked()
		}
	default:
		e.state = state
	}
	g.mu.Unlock()
	g.close(victims)
}

// Authenticate marks r's connection as serving an authenticated request:
// it does not count against the bound until the request ends. It does
// nothing for a request not served through a Guard.
func Authenticate(r *http.Request) {
	e, _ := r.Context().Value(entryKey{}).(*entry)
	if e == nil {
		return
	}
	e.g.mu.Lock()
	if !e.gone && !e.authed {
		e.authed = true
		e.g.unauth--
	}
	e.g.mu.Unlock()
}

// AuthenticateConn marks a connection hijacked from the guard's server (a
// WebSocket) as authenticated for good: it no longer counts, and is never
// evicted. It does nothing for other connections.
func (g *Guard) AuthenticateConn(nc net.Conn) {
	hc, ok := nc.(*Conn)
	if !ok || hc.e.g != g {
		return
	}
	g.mu.Lock()
	if !hc.e.gone && !hc.e.authed {
		hc.e.authed = true
		g.unauth--
	}
	g.mu.Unlock()
}

// Unauthenticated returns the number of connections that count against
// the bound.
func (g *Guard) Unauthenticated() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unauth
}

// Conn is a connection hijacked from a guarded server: closing it stops
// its tracking.
type Conn struct {
	net.Conn
	e *entry
}

// Close closes the connection and forgets it.
func (c *Conn) Close() error {
	g := c.e.g
	g.mu.Lock()
	g.removeLocked(c.e)
	g.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when it can.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// handler wraps next so that every write of a response has a deadline.
func (g *Guard) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, _ := r.Context().Value(entryKey{}).(*entry)
		if g.writeTimeout <= 0 && e == nil {
			next.ServeHTTP(w, r)
			return
		}
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: g.writeTimeout, e: e}
		defer func() {
			// net/http writes the end of the response after the
			// handler returns: that write has its deadline too.
			if !dw.hijacked {
				dw.refresh()
			}
		}()
		next.ServeHTTP(dw, r)
	})
}

// writeChunk is the most written under one deadline: a large body written
// at once needs progress, not the whole body, within the timeout.
const writeChunk = 256 << 10

// deadlineWriter sets the connection's write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	e        *entry
	hijacked bool
}

func (w *deadlineWriter) refresh() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.refresh()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for {
		w.refresh()
		chunk := p[n:]
		if len(chunk) > writeChunk {
			chunk = chunk[:writeChunk]
		}
		m, err := w.ResponseWriter.Write(chunk)
		n += m
		if err != nil || n == len(p) {
			return n, err
		}
	}
}

// ReadFrom keeps the connection's sendfile path (artifacts, files), one
// chunk per deadline.
func (w *deadlineWriter) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{w}, r)
	}
	var total int64
	for {
		w.refresh()
		n, err := rf.ReadFrom(io.LimitReader(r, writeChunk))
		total += n
		if err != nil || n < writeChunk {
			return total, err
		}
	}
}

// writerOnly hides ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

func (w *deadlineWriter) Flush() {
	w.refresh()
	_ = w.rc.Flush()
}

func (w *deadlineWriter) FlushError() error {
	w.refresh()
	return w.rc.Flush()
}

// Hijack hands over the connection without a write deadline, wrapped so
// that the guard learns when it closes.
func (w *deadlineWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := w.rc.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	nc.SetWriteDeadline(time.Time{})
	if w.e == nil {
		return nc, brw, nil
	}
	return &Conn{Conn: nc, e: w.e}, brw, nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
