package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/uuid"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Server defaults.
const (
	// DefaultMaxInFlight is the default limit of requests in flight per
	// client connection.
	DefaultMaxInFlight = 256
	// DefaultMaxConnections is the default limit of client connections.
	DefaultMaxConnections = 1024
	// DefaultMaxUnauthConnections is the default limit of connections
	// that have not yet sent an authenticated request (a request with the
	// token, or any request when none is required). The rest of
	// MaxConnections is the reserve of authenticated agents.
	DefaultMaxUnauthConnections = 64
	// DefaultAuthTimeout is how long a new connection may go without an
	// authenticated request before it is closed.
	DefaultAuthTimeout = 10 * time.Second
	// DefaultMaxQueuedBytes is the default limit of reply and event bytes
	// waiting to be written to one client. A client that lets more pile
	// up is disconnected, so that a slow reader never holds the others up.
	DefaultMaxQueuedBytes = 96 << 20
	// DefaultMaxTotalQueuedBytes is the default limit of reply and event
	// bytes waiting to be written to all the clients of a server together
	// (socket clients and the HTTP API's event streams). When it would be
	// exceeded, the slowest client is disconnected: the one that has gone
	// longest without reading while bytes waited for it.
	DefaultMaxTotalQueuedBytes = 256 << 20
)

// ServerOptions configures a [Server]. The zero value of each field is its
// documented default.
type ServerOptions struct {
	// Extension receives every request the server does not answer itself.
	// Nil means none: requests get the "not connected" error. If it
	// implements [EventSource], its events go to every client.
	Extension Extension

	// Token is the API token every request must carry in its "token"
	// member (compared in constant time). When empty, every request is
	// refused with [agentproto.MsgTokenNotConfigured] unless AllowUnauthenticated is set.
	Token string
	// AllowUnauthenticated lets requests through without a token when
	// Token is empty (WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1). It has no
	// effect when Token is set.
	AllowUnauthenticated bool

	// DefaultTimeout applies to requests whose timeoutMs is missing or 0.
	// Zero means [agentproto.DefaultTimeout] (60 s).
	DefaultTimeout time.Duration
	// MaxRequestSize is the largest request frame read, in bytes. Zero
	// means [agentproto.DefaultMaxRequestSize].
	MaxRequestSize int
	// MaxInFlight limits the requests in flight per connection; beyond it
	// requests are answered at once with a "Too many requests in flight"
	// error. Zero means [DefaultMaxInFlight].
	MaxInFlight int
	// MaxConnections limits the client connections served at once;
	// beyond it a new connection gets an error frame and is closed. Zero
	// means [DefaultMaxConnections].
	MaxConnections int
	// MaxUnauthConnections limits the connections that have not yet sent
	// an authenticated request. Beyond it, a new connection makes the
	// server close the oldest of them (with an error frame), so that
	// connections without the token can neither fill MaxConnections nor
	// keep a new agent out: the rest of MaxConnections is a reserve for
	// agents that have authenticated. Zero means
	// [DefaultMaxUnauthConnections], or half of MaxConnections when that
	// is smaller.
	MaxUnauthConnections int
	// AuthTimeout closes (with an error frame) a connection that has sent
	// no authenticated request that long after it was accepted. A client
	// that only listens to events proves itself with one request, such as
	// bridge.health. Zero means [DefaultAuthTimeout]; negative means no
	// timeout, for agents written to the reference's "events need no
	// token" (such connections stay bounded by MaxUnauthConnections).
	AuthTimeout time.Duration
	// MaxQueuedBytes limits the bytes waiting to be written to one client
	// before it is disconnected as too slow. Zero means
	// [DefaultMaxQueuedBytes].
	MaxQueuedBytes int
	// MaxTotalQueuedBytes limits the bytes waiting to be written to all
	// clients together, socket clients and the HTTP API's event streams,
	// a write in progress included. When a reply or an event would exceed
	// it, the slowest client (the one that has gone longest without taking
	// bytes while some waited for it; the one with the most among equals)
	// is disconnected, with a log line saying why, until it fits; clients
	// that read are served on. Zero means [DefaultMaxTotalQueuedBytes].
	MaxTotalQueuedBytes int

	// Logger receives the server's diagnostics. Nil means none. Messages
	// never contain payloads or tokens.
	Logger *slog.Logger
}

// Server serves the agent protocol on stream listeners (Unix sockets, or
// in-memory pipes in tests): it authenticates requests, answers
// bridge.health itself, forwards everything else to its [Extension], and
// sends every event to every client.
//
// Its methods are safe for concurrent use.
type Server struct {
	ext       Extension
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	hasToken  bool
	allowAnon bool
	timeout   time.Duration
	maxReq    int
	maxFlight int
	maxConns  int
	maxUnauth int
	authWait  time.Duration
	maxQueued int
	budget    *wire.Budget

	mu          sync.Mutex
	listeners   map[*net.Listener]struct{}
	conns       map[*serverConn]struct{}
	unauth      int                // connections in conns that have not authenticated
	connSeq     uint64             // accept order
	calls       map[*Call]struct{} // in flight from the HTTP API
	subs        map[*subscriber]struct{}
	closing     bool          // Shutdown or Close called
	closed      chan struct{} // closed with closing
	closingFlag atomic.Bool   // closing, for lock-free reads
	inFlight    atomic.Int64

	connWG sync.WaitGroup
	fnWG   trackedGroup
}

// NewServer returns a [Server] configured by opts. Nil opts mean all
// defaults: no extension, and every request refused for want of a token.
func NewServer(opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	s := &Server{
		ext:       opts.Extension,
		log:       opts.Logger,
		allowAnon: opts.AllowUnauthenticated,
		timeout:   wire.OrDefault(opts.DefaultTimeout, agentproto.DefaultTimeout),
		maxReq:    wire.OrDefault(opts.MaxRequestSize, agentproto.DefaultMaxRequestSize),
		maxFlight: wire.OrDefault(opts.MaxInFlight, DefaultMaxInFlight),
		maxConns:  wire.OrDefault(opts.MaxConnections, DefaultMaxConnections),
		authWait:  wire.OrDefault(opts.AuthTimeout, DefaultAuthTimeout),
		maxQueued: wire.OrDefault(opts.MaxQueuedBytes, DefaultMaxQueuedBytes),
		budget:    wire.NewBudget(int64(wire.OrDefault(opts.MaxTotalQueuedBytes, DefaultMaxTotalQueuedBytes))),
		listeners: map[*net.Listener]struct{}{},
		closed:    make(chan struct{}),
		conns:     map[*serverConn]struct{}{},
		calls:     map[*Call]struct{}{},
		subs:      map[*subscriber]struct{}{},
	}
	s.maxUnauth = wire.OrDefault(opts.MaxUnauthConnections, min(DefaultMaxUnauthConnections, max(1, s.maxConns/2)))
	if opts.AuthTimeout < 0 {
		s.authWait = 0
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Token != "" {
		s.hasToken = true
		s.tokenHash = sha256.Sum256([]byte(opts.Token))
	}
	if src, ok := s.ext.(EventSource); ok {
		src.SetEventHandler(s.publish)
	}
	return s
}

func (s *Server) extension() Extension { return s.ext }

func (s *Server) extensionOnline() bool { return s.ext != nil && s.ext.Online() }

// Serve accepts connections on l and serves each in goroutines of its own
// until Shutdown or Close, when it returns [ErrServerClosed].
//
// Like net/http's Server, Serve outlives a temporary failure of Accept:
// when the process runs out of file descriptors (EMFILE, ENFILE), a
// connection is aborted before it is accepted (ECONNABORTED), memory or
// buffers run short, or the listener reports a timeout, Serve waits (5 ms,
// doubling up to 1 s, reset by the next success) and accepts again, so a
// burst of connections from other local processes can never take the
// socket away for good. It returns only on a closed listener or a
// permanent error, which the caller must treat as the end of the service.
// Serve closes l when it returns. It may be called for several listeners.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[&l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, &l)
		s.mu.Unlock()
		l.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			if !temporaryAcceptError(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("bridge: accept failed; retrying", "err", err, "delay", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.closed:
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		s.startConn(nc)
	}
}

// errTemporary is what a listener's Accept may wrap to ask Serve to retry.
var errTemporary = errors.New("bridge: temporary accept error")

// temporaryAcceptError reports whether an Accept error may go away by
// itself: the listener is still usable.
func temporaryAcceptError(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	if errors.Is(err, errTemporary) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, errno := range temporaryAcceptErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	// What the platform itself calls temporary (syscall.Errno's
	// Temporary: EINTR, EMFILE, ENFILE, ECONNRESET, ECONNABORTED, EAGAIN,
	// ETIMEDOUT and their Windows counterparts).
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

func (s *Server) isClosing() bool { return s.closingFlag.Load() }

func (s *Server) startConn(nc net.Conn) {
	w := nativemsg.NewWriter(nc, &nativemsg.WriterOptions{MaxFrameSize: wire.MaxReplySize})
	c := &serverConn{srv: s, nc: nc}
	c.out = wire.NewQueue(wire.NativeWriter(w), wire.QueueOptions{MaxQueued: s.maxQueued, Direct: wire.RawConn(nc), Budget: s.budget, OnEvict: c.overBudget})
	// The goroutines are started under s.mu, so that Close, which waits
	// for them after setting closing under s.mu, never waits while one
	// is being added (a sync.WaitGroup must not grow from zero during
	// Wait).
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		nc.Close()
		return
	}
	if s.unauth >= s.maxUnauth || (len(s.conns) >= s.maxConns && s.unauth > 0) {
		// The oldest connection without an authenticated request makes
		// room: the newest is the one most likely to be an agent that is
		// about to authenticate, and a process holding connections
		// without the token must open MaxUnauthConnections newer ones to
		// push it out.
		s.evictLocked(s.oldestUnauthLocked(), "Connection closed: too many connections to the bridge have not sent an authenticated request; the limit is "+fmt.Sprint(s.maxUnauth))
	}
	if len(s.conns) >= s.maxConns {
		s.log.Warn("bridge: connection refused: too many connections", "limit", s.maxConns)
		s.connWG.Go(func() {
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			msg := "Too many connections to the bridge; the limit is " + fmt.Sprint(s.maxConns)
			nativemsg.NewWriter(nc, nil).WriteMessage(appendError(nil, nil, msg))
			nc.Close()
		})
		return
	}
	s.connSeq++
	c.seq = s.connSeq
	s.conns[c] = struct{}{}
	s.unauth++
	if s.authWait > 0 {
		c.authTimer = time.AfterFunc(s.authWait, c.authExpired)
	}
	s.connWG.Go(c.writeLoop)
	s.connWG.Go(c.readLoop)
}

// oldestUnauthLocked returns the connection without an authenticated
// request accepted first, or nil. s.mu is held.
func (s *Server) oldestUnauthLocked() *serverConn {
	var oldest *serverConn
	for c := range s.conns {
		if !c.authed && (oldest == nil || c.seq < oldest.seq) {
			oldest = c
		}
	}
	return oldest
}

// evictLocked stops counting c among the connections at once, and closes
// it after an error frame saying why. s.mu is held.
func (s *Server) evictLocked(c *serverConn, msg string) {
	if c == nil || !s.forgetLocked(c) {
		return
	}
	s.log.Warn("bridge: closing a connection without an authenticated request", "reason", msg)
	s.connWG.Go(func() { c.kick(msg) })
}

// forgetLocked removes c from the server's connections, and reports
// whether it was there. s.mu is held.
func (s *Server) forgetLocked(c *serverConn) bool {
	if _, ok := s.conns[c]; !ok {
		return false
	}
	delete(s.conns, c)
	if !c.authed {
		s.unauth--
	}
	return true
}

// Shutdown stops the server gracefully: it closes the listeners, answers
// new requests on open connections with [agentproto.MsgShuttingDown], waits until every
// request in flight has been answered and the answers written, then closes
// the connections. If ctx ends first, Shutdown closes everything as Close
// does and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginClosing()
	wait := time.Millisecond
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !s.quiescent() {
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-timer.C:
			wait = min(2*wait, 50*time.Millisecond)
			timer.Reset(wait)
		}
	}
	return s.Close()
}

// quiescent reports whether nothing is in flight or waiting to be written.
func (s *Server) quiescent() bool {
	if s.inFlight.Load() > 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.out.Queued() > 0 || !isClosed(c.out.Drained()) {
			return false
		}
	}
	return true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (s *Server) beginClosing() {
	s.mu.Lock()
	if !s.closing {
		close(s.closed)
	}
	s.closing = true
	s.closingFlag.Store(true)
	for l := range s.listeners {
		(*l).Close()
	}
	s.mu.Unlock()
}

// Close closes the listeners and every connection at once; requests in
// flight are abandoned (their late answers are dropped). It waits for the
// server's goroutines to end. Close is idempotent.
func (s *Server) Close() error {
	s.beginClosing()
	s.mu.Lock()
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	subs := make([]*subscriber, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	calls := make([]*Call, 0, len(s.calls))
	for call := range s.calls {
		calls = append(calls, call)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	for _, call := range calls {
		call.complete(nil, errShuttingDown, true, nil)
	}
	for _, sub := range subs {
		sub.close()
	}
	s.connWG.Wait()
	s.fnWG.closeAndWait()
	return nil
}

// authorize checks a request's token. It returns the refusal, or nil.
func (s *Server) authorize(r *wire.Request) *agentproto.RemoteError {
	if !s.hasToken {
		if s.allowAnon {
			return nil
		}
		return errTokenNotSet
	}
	if !r.HasToken {
		return errUnauthorized
	}
	if !s.tokenMatches(r.Token) {
		return errUnauthorized
	}
	return nil
}

// tokenMatches compares a token with the server's in constant time: both
// are hashed first, so not even the length leaks.
func (s *Server) tokenMatches(token []byte) bool {
	h := sha256.Sum256(token)
	return subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) == 1
}

func (s *Server) appendHealth(dst []byte) []byte {
	dst = append(dst, `{"ok":true,"bridge":"online","extension":`...)
	if s.extensionOnline() {
		dst = append(dst, `"online"`...)
	} else {
		dst = append(dst, `"offline"`...)
	}
	if s.hasToken {
		return append(dst, `,"authRequired":true}`...)
	}
	return append(dst, `,"authRequired":false}`...)
}

// Publish sends an event to every client of the server as
// {"kind":"event","event":event}. event must be one valid JSON value
// (Publish checks) and must not be modified afterwards. A client that
// cannot keep up is disconnected rather than allowed to hold others up.
func (s *Server) Publish(event json.RawMessage) error {
	if err := wire.Valid(event); err != nil {
		return fmt.Errorf("bridge: invalid event: %w", err)
	}
	s.publish(event)
	return nil
}

var (
	eventHead  = []byte(`{"kind":"event","event":`)
	closeBrace = []byte(`}`)
)

func (s *Server) publish(event json.RawMessage) {
	type drop struct {
		c   *serverConn
		err error
	}
	var slow []drop
	s.mu.Lock()
	for c := range s.conns {
		if err := c.out.Push(eventHead, event, closeBrace, nil, nil); errors.Is(err, wire.ErrQueueFull) || errors.Is(err, wire.ErrOverBudget) {
			slow = append(slow, drop{c, err})
		}
	}
	if len(s.subs) > 0 {
		taskID := agentproto.Event{Raw: event}.TaskID()
		for sub := range s.subs {
			sub.deliver(event, taskID)
		}
	}
	s.mu.Unlock()
	for _, d := range slow {
		d.c.dropSlow(d.err)
	}
}

// newID returns a quoted random UUID (version 4), the form the reference
// host gives requests that came without an id.
func newID() []byte {
	b := make([]byte, 0, uuid.Len+2)
	b = append(b, '"')
	b = uuid.Append(b)
	return append(b, '"')
}

// dispatch handles one decoded request: auth, then health locally, then
// everything else to the extension. buf holds the request's frame.
func (s *Server) dispatch(c *serverConn, r *wire.Request, buf *wire.Buffer) {
	if r.ID == nil {
		r.ID = newID()
	}
	if err := s.authorize(r); err != nil {
		c.pushError(r.ID, err.Message, buf)
		return
	}
	if !c.authed {
		c.authenticated()
	}
	if r.Type == nil {
		c.pushError(r.ID, agentproto.MsgInvalidType, buf)
		return
	}
	if r.TypeStr == agentproto.TypeHealth {
		var health [128]byte
		c.pushResult(r.ID, s.appendHealth(health[:0]), buf, nil)
		return
	}
	call := s.newCall(r)
	call.conn = c
	call.reqBuf = buf
	// The timer runs from admit on: the call may be answered, and its
	// reply release buf, before the extension has even seen the call.
	// This reference keeps the payload (and type) valid until Forward
	// has returned.
	buf.Retain()
	defer buf.Release()
	if refusal := c.admit(call); refusal != nil {
		c.pushError(r.ID, refusal.Message, buf)
		return
	}
	s.forward(call)
}

func (s *Server) newCall(r *wire.Request) *Call {
	call := &Call{
		Type:    r.TypeStr,
		Payload: r.Payload,
		Timeout: r.Timeout,
		typeLit: r.Type,
		id:      r.ID,
		srv:     s,
	}
	if call.Payload == nil {
		call.Payload = wire.EmptyObject
	}
	if call.Timeout <= 0 {
		call.Timeout = s.timeout
	}
	return call
}

// forward starts the timer and hands an admitted call to the extension.
func (s *Server) forward(call *Call) {
	if s.isClosing() {
		call.complete(nil, errShuttingDown, false, nil)
		return
	}
	if !s.extensionOnline() {
		call.complete(nil, errExtensionOffline, false, nil)
		return
	}
	s.ext.Forward(call)
}

// finish delivers a completed call's answer. The request's buffer (which
// the result may alias) and resultBuf are released once the reply is
// written.
func (s *Server) finish(call *Call, result []byte, err error, resultBuf *wire.Buffer) {
	if c := call.conn; c != nil {
		c.release(call)
		if err != nil {
			resultBuf.Release()
			c.pushError(call.id, err.Error(), call.reqBuf)
		} else {
			c.pushResult(call.id, result, call.reqBuf, resultBuf)
		}
	} else if call.sink != nil {
		s.mu.Lock()
		delete(s.calls, call)
		s.mu.Unlock()
		if resultBuf != nil {
			result = bytes.Clone(result)
			resultBuf.Release()
		}
		call.sink <- callResult{result: result, err: err}
	}
	s.inFlight.Add(-1)
}

// serverConn is one client connection.
type serverConn struct {
	srv *Server
	nc  net.Conn
	out *wire.Queue

	seq uint64 // accept order
	// authed is set, under the server's lock, by the connection's first
	// authenticated request; only the read loop sets it.
	authed    bool
	authTimer *time.Timer // closes the connection unless it authenticates

	mu       sync.Mutex
	calls    *Call // doubly linked list of calls in flight
	inFlight int
	closed   bool
	// One timer per connection times its calls out: it is armed for the
	// earliest deadline of its calls, and fails every overdue call when
	// it fires. A call that ends in time leaves it alone, so a steady
	// stream of calls arms no timer at all (a timer per call costs a
	// thread wake-up per request on an otherwise idle timer heap).
	timer   *time.Timer
	timerAt time.Time // when timer fires; zero when it is not armed
}

func (c *serverConn) readLoop() {
	defer c.close()
	s := c.srv
	br := bufio.NewReaderSize(c.nc, wire.ReadBufferSize)
	r := nativemsg.NewReader(br, &nativemsg.ReaderOptions{MaxFrameSize: s.maxReq})
	var req wire.Request
	for {
		frame, buf, err := wire.ReadFrame(r)
		if err != nil {
			var fse *nativemsg.FrameSizeError
			switch {
			case errors.As(err, &fse):
				s.log.Warn("bridge: request frame too large; closing the connection", "size", fse.Size, "limit", fse.Limit)
				c.pushError(nil, requestFrameTooLarge(fse.Size, uint64(fse.Limit)), nil)
				// The client may still be writing the frame: reading it
				// away lets its write end, and the error reach it, where
				// closing with unread bytes would reset the connection.
				if c.nc.SetReadDeadline(time.Now().Add(drainTimeout)) == nil {
					io.CopyN(io.Discard, br, int64(fse.Size))
				}
				c.closeAfterFlush()
				return
			case errors.Is(err, nativemsg.ErrEmptyFrame):
				c.pushError(nil, "Unexpected end of JSON input", nil)
				continue
			case errors.Is(err, nativemsg.ErrInvalidJSON):
				c.pushError(nil, "Unexpected token in JSON: the frame does not start a JSON value", nil)
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("bridge: connection read ended", "err", err)
			}
			return
		}
		if err := wire.DecodeRequest(frame, &req); err != nil {
			// req.ID is set when the frame is valid JSON with one id.
			c.pushError(req.ID, err.Error(), buf)
			continue
		}
		s.dispatch(c, &req, buf)
	}
}

// drainTimeout bounds the reading away of an oversized request frame.
const drainTimeout = 2 * time.Second

// closeAfterFlush waits briefly for queued frames to reach the client;
// the caller then closes the connection.
func (c *serverConn) closeAfterFlush() {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-c.out.Drained():
	case <-t.C:
	case <-c.srv.closed:
	}
}

func (c *serverConn) writeLoop() {
	if err := c.out.Run(); err != nil {
		c.srv.log.Debug("bridge: connection write failed", "err", err)
		c.close()
	}
}

// admit records call as in flight on c, or refuses it.
func (c *serverConn) admit(call *Call) *agentproto.RemoteError {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errShuttingDown
	}
	if c.inFlight >= c.srv.maxFlight {
		return tooManyInFlight(c.srv.maxFlight)
	}
	c.inFlight++
	c.srv.inFlight.Add(1)
	c.armTimer(call)
	call.next = c.calls
	if c.calls != nil {
		c.calls.prev = call
	}
	c.calls = call
	return nil
}

// armTimer sets call's deadline and makes sure the connection's timer
// fires by then. The caller holds c.mu.
func (c *serverConn) armTimer(call *Call) {
	now := time.Now()
	call.deadline = now.Add(call.Timeout)
	switch {
	case c.timer == nil:
		c.timer = time.AfterFunc(call.Timeout, c.expireCalls)
	case c.timerAt.IsZero() || call.deadline.Before(c.timerAt):
		c.timer.Reset(call.Timeout)
	default:
		return // it fires earlier, and then re-arms for this call
	}
	c.timerAt = call.deadline
}

// expireCalls runs when the connection's timer fires: it fails every call
// whose deadline has passed, and re-arms the timer for the earliest
// deadline left.
func (c *serverConn) expireCalls() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	var overdue []*Call
	var next time.Time
	for call := c.calls; call != nil; call = call.next {
		if !call.deadline.After(now) {
			overdue = append(overdue, call)
		} else if next.IsZero() || call.deadline.Before(next) {
			next = call.deadline
		}
	}
	c.timerAt = next
	if !next.IsZero() {
		c.timer.Reset(next.Sub(now))
	}
	c.mu.Unlock()
	for _, call := range overdue {
		call.expire()
	}
}

func (c *serverConn) release(call *Call) {
	c.mu.Lock()
	if call.prev != nil {
		call.prev.next = call.next
	} else if c.calls == call {
		c.calls = call.next
	}
	if call.next != nil {
		call.next.prev = call.prev
	}
	call.prev, call.next = nil, nil
	c.inFlight--
	c.mu.Unlock()
}

var (
	idHead    = []byte(`{"id":`)
	resultMid = []byte(`,"result":`)
)

// pushResult queues {"id":id,"result":result}; rel1 and rel2 are released
// once the frame no longer needs them.
func (c *serverConn) pushResult(id, result []byte, rel1, rel2 *wire.Buffer) {
	var buf [96]byte
	head := append(append(append(buf[:0], idHead...), id...), resultMid...)
	if result == nil {
		result = wire.Null
	}
	if err := c.out.Send(head, result, closeBrace, rel1, rel2); err != nil {
		c.dropSlow(err)
	}
}

// pushError queues {"id":id,"error":msg} (no id when id is nil) and then
// releases rel.
func (c *serverConn) pushError(id []byte, msg string, rel *wire.Buffer) {
	var buf [160]byte
	if err := c.out.Send(appendError(buf[:0], id, msg), nil, nil, rel, nil); err != nil {
		c.dropSlow(err)
	}
}

func appendError(dst, id []byte, msg string) []byte {
	dst = append(dst, '{')
	if id != nil {
		dst = append(append(append(dst, `"id":`...), id...), ',')
	}
	dst = append(dst, `"error":`...)
	return append(wire.AppendString(dst, msg), '}')
}

// dropSlow disconnects a client whose queue overflowed, or that is the
// slowest when the server's total is reached. The caller must not hold
// the server's or the connection's lock.
func (c *serverConn) dropSlow(err error) {
	switch {
	case errors.Is(err, wire.ErrQueueFull):
		c.srv.log.Warn("bridge: disconnecting a client that does not read its replies", "limit", c.srv.maxQueued)
		c.close()
	case errors.Is(err, wire.ErrOverBudget):
		// Through the budget's own path (overBudget), which runs once
		// per queue: the budget may also have evicted this queue for
		// another's frame meanwhile, and the client is dropped and
		// logged once.
		c.out.Evict(err)
	}
}

// overBudget is called when the budget evicts the connection's queue for
// another's frame: possibly with the server's lock held, so it only logs
// and closes the socket; the read loop then ends the connection.
func (c *serverConn) overBudget(held int64) {
	c.srv.logOverBudget(held)
	c.nc.Close()
}

func (s *Server) logOverBudget(held int64) {
	s.log.Warn("bridge: disconnecting the slowest client: the bytes waiting for all clients together reached MaxTotalQueuedBytes, and this one has gone longest without reading",
		"limit", s.budget.Limit(), "waiting", held)
}

// authenticated records the connection's first authenticated request: it
// no longer counts against MaxUnauthConnections, and its auth timer stops.
func (c *serverConn) authenticated() {
	s := c.srv
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		s.unauth--
	}
	c.authed = true
	s.mu.Unlock()
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
}

// authExpired closes the connection if it has not authenticated in time.
func (c *serverConn) authExpired() {
	s := c.srv
	s.mu.Lock()
	if !c.authed {
		s.evictLocked(c, "Connection closed: no authenticated request within "+s.authWait.String())
	}
	s.mu.Unlock()
}

// kick sends an error frame saying why the connection ends, waits briefly
// for it to be written, and closes the connection.
func (c *serverConn) kick(msg string) {
	c.pushError(nil, msg, nil)
	c.closeAfterFlush()
	c.close()
}

// close ends the connection: its calls in flight are abandoned.
func (c *serverConn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	var abandoned []*Call
	for call := c.calls; call != nil; call = call.next {
		abandoned = append(abandoned, call)
	}
	c.mu.Unlock()

	c.out.Close()
	c.nc.Close()
	for _, call := range abandoned {
		call.complete(nil, errShuttingDown, true, nil)
	}
	s := c.srv
	s.mu.Lock()
	s.forgetLocked(c)
	s.mu.Unlock()
}
