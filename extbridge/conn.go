package extbridge

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Close codes and reasons the hub sends. Reasons are fixed strings: they
// never carry peer input.
const (
	closePolicy    = websocket.StatusPolicyViolation
	closeNormal    = websocket.StatusNormalClosure
	closeGoingAway = websocket.StatusGoingAway
)

var (
	errHelloTimeout   = errors.New("hello timeout")
	errHelloExpected  = errors.New("first frame is not browser_hello")
	errHelloUTF8      = errors.New("browser_hello is not valid UTF-8")
	errBadToken       = errors.New("authentication failed")
	errReplaced       = errors.New("replaced by a newer connection")
	errLiveness       = errors.New("liveness timeout: no pong")
	errStalled        = errors.New("write failed or stalled")
	errHandshakeState = errors.New("hub closed during handshake")
	errAnotherBrowser = errors.New("another browser's extension is connected")
)

// extConn is one extension connection, from the upgrade to its end.
type extConn struct {
	hub  *Hub
	ws   *websocket.Conn
	raw  net.Conn  // the hijacked connection: closing it ends every blocked call
	cork *corkConn // nil when writes could not be routed through it
	info ConnInfo
	ack  []byte // the browser_hello_ack, naming the dialect chosen

	// ctx is cancelled when the connection ends; backend calls and tool
	// requests run under it.
	ctx    context.Context
	cancel context.CancelFunc

	// Outbound frames wait in out (bounded) and wake tells the writer
	// goroutine about them. wmu is held by whoever writes frames, the
	// writer goroutine or a sender writing in place (sendNow); frames leave
	// out only under it, so a frame written in place never overtakes a
	// queued one.
	out      chan []byte
	wake     chan struct{}
	wmu      sync.Mutex
	done     chan struct{} // closed when the connection begins to end
	ended    bool          // guarded by hub.mu
	endErr   error         // why it ended, set before done is closed
	endCode  websocket.StatusCode
	graceful bool // drain the queue before the close frame

	authenticated atomic.Bool
	endedFlag     atomic.Bool  // ended, for the reader, which takes no lock per frame
	lastSeen      atomic.Int64 // unix nanoseconds of the last frame or pong

	toolsMu sync.Mutex
	tools   map[string]struct{} // tool request ids in flight

	turn    readTurn     // who reads: the serve loop or a command's caller
	pending atomic.Int32 // browser commands in flight on this connection (changed under hub.mu)

	wg sync.WaitGroup // writer, pinger, tool goroutines
}

// hijackRecorder remembers the connection websocket.Accept hijacks, so that
// the hub can close it outright (a close handshake can block for seconds).
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
	cork *corkConn
	gate *frameGate
}

func (w *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return c, brw, err
	}
	w.conn = c
	// Route the WebSocket's reads through the frame gate (readturn.go),
	// with whatever the server had read past the request.
	buffered, _ := brw.Reader.Peek(brw.Reader.Buffered())
	w.gate = newFrameGate(c, buffered)
	gated := &gatedConn{Conn: c, gate: w.gate}
	brw.Reader = bufio.NewReaderSize(gated, 4096)
	if brw.Writer.Buffered() == 0 {
		// Route the WebSocket's writes through a corkable writer, so that
		// the writer goroutine can send a burst of queued frames in one
		// system call.
		w.cork = &corkConn{Conn: gated}
		brw.Writer = bufio.NewWriterSize(w.cork, 4096)
		return w.cork, brw, nil
	}
	return gated, brw, nil
}

// gatedConn is the hijacked connection as the WebSocket library sees it:
// its reads go through the frame gate.
type gatedConn struct {
	net.Conn
	gate *frameGate
}

func (c *gatedConn) Read(p []byte) (int, error) { return c.gate.Read(p) }

// corkConn batches writes while corked; uncork sends them in one call.
// Writes are serialized by its mutex, so bytes keep their order whichever
// goroutine (writer, pinger, pong) writes.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *corkConn) setCork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > maxCorkBytes {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// Batches of queued frames: at most this many frames or bytes per system
// call, and only frames this small are batched.
const (
	maxCorkFrames = 64
	maxCorkBytes  = 256 << 10
	maxCorkFrame  = 16 << 10
)

func (w *hijackRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *Hub) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	if !loopbackRequest(r) {
		h.log.Warn("extbridge: refused non-loopback websocket request", "remote", r.RemoteAddr)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	origin, ok := h.checkOrigin(r)
	if !ok {
		h.log.Warn("extbridge: refused websocket origin", "origin", truncate(origin, 128))
		http.Error(w, "forbidden origin", http.StatusForbidden)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "hub closed", http.StatusServiceUnavailable)
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()

	rec := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(rec, r, &websocket.AcceptOptions{
		// The origin was checked above against the extension schemes;
		// the library's same-host check would refuse them all.
		InsecureSkipVerify: true,
	})
	if err != nil {
		h.log.Debug("extbridge: websocket upgrade failed", "err", err)
		return
	}
	c := &extConn{
		hub:   h,
		ws:    ws,
		raw:   rec.conn,
		cork:  rec.cork,
		out:   make(chan []byte, h.opts.SendQueue),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		tools: map[string]struct{}{},
	}
	c.turn.wake = make(chan struct{}, 1)
	c.info = ConnInfo{Origin: origin, RemoteAddr: r.RemoteAddr}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.touch()
	// Deadlines set by the HTTP server do not apply to the WebSocket. A
	// command's caller reads the socket only where a read deadline can
	// interrupt it (readturn.go): on a transport without deadlines it
	// could not stop until bytes came.
	if c.raw != nil && c.raw.SetDeadline(time.Time{}) == nil && c.raw.SetReadDeadline(time.Time{}) == nil {
		c.turn.gate = rec.gate
	}

	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.kill()
		c.cancel()
		return
	}
	h.conns[c] = struct{}{}
	h.mu.Unlock()

	c.serve()

	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// serve runs the connection in the handler's goroutine, which is the
// connection's one reader.
func (c *extConn) serve() {
	h := c.hub
	defer func() {
		c.stopTurnTimer()
		c.cancel()
		c.wg.Wait()
		c.kill()
		c.ws.CloseNow() // releases the library's buffers; nothing else uses ws now
	}()
	if err := c.handshake(); err != nil {
		c.terminate(err, closePolicy, false)
		// The close handshake needs the reader; the writer is not running.
		c.closeHandshake(closePolicy, closeReason(err))
		level := slog.LevelInfo
		if errors.Is(err, errAnotherBrowser) {
			level = slog.LevelDebug // logged once per episode in activate
		}
		h.log.Log(context.Background(), level, "extbridge: handshake refused", "remote", c.info.RemoteAddr, "reason", err)
		return
	}
	c.readLoop()
}

// handshake reads the hello with the pre-hello limit and a deadline, then
// makes the connection current.
func (c *extConn) handshake() error {
	h := c.hub
	c.ws.SetReadLimit(h.opts.PreHelloReadLimit)

	// On timeout the hub sends 1008 rather than dropping TCP: the timer
	// goroutine writes the close frame while this goroutine keeps reading
	// and so completes the close handshake.
	timedOut := make(chan struct{})
	timer := time.AfterFunc(h.opts.HelloTimeout, func() {
		defer close(timedOut)
		c.terminate(errHelloTimeout, closePolicy, false)
		c.closeHandshake(closePolicy, closeReason(errHelloTimeout))
	})
	typ, data, err := c.ws.Read(context.Background())
	if !timer.Stop() {
		<-timedOut
		return errHelloTimeout
	}
	if err != nil {
		return err
	}
	if typ != websocket.MessageText {
		return errHelloExpected
	}
	if !utf8.Valid(data) {
		return errHelloUTF8
	}
	var hello helloFrame
	if err := strictjson.Unmarshal(data, &hello); err != nil || hello.Type != typeHello {
		return errHelloExpected
	}
	sum := sha256.Sum256([]byte(hello.Token))
	if subtle.ConstantTimeCompare(sum[:], h.tokenHash[:]) != 1 {
		return errBadToken
	}
	c.ws.SetReadLimit(h.opts.ReadLimit)
	c.info.Version = cleanVersion(hello.ExtensionVersion)
	c.info.Client = cleanVersion(hello.Client)
	c.info.ProtocolVersion, c.ack = negotiate(hello.ProtocolVersion)
	c.info.ConnectedAt = time.Now()
	c.touch()
	return c.activate()
}

// activate makes c the current connection. The ack, the mode frame and the
// still-pending approval requests are the first frames the writer sends;
// anything sent to c afterwards (chat events included) follows them.
func (c *extConn) activate() error {
	h := c.hub
	mode, err := h.opts.Backend.Mode(c.ctx)
	if err != nil || !mode.Valid() {
		mode = ModeStandard
	}
	modeJSON, _ := json.Marshal(modeFrame{Type: typeMode, Mode: mode})
	initial := [][]byte{c.ack, modeJSON}

	// The writer goroutine owns wmu until it has written the initial
	// frames: nothing may be written in place before the ack.
	c.wmu.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.wmu.Unlock()
		return errHandshakeState
	}
	old := h.cur.Load()
	if old != nil {
		if ok, logAttrs := h.admitReplacementLocked(old, c); !ok {
			h.mu.Unlock()
			c.wmu.Unlock()
			if logAttrs != nil {
				h.log.Warn("extbridge: another browser's extension is trying to connect; keeping the current one", logAttrs...)
			}
			return errAnotherBrowser
		}
	}
	if old == nil {
		h.flapLogged = false // a new episode starts with this connection
	}
	var oldFailed []*pendingCall
	oldFirst := false
	if old != nil {
		// The old connection's disconnect is reported before this one's
		// connect.
		oldFailed, oldFirst = old.endLocked(errReplaced, closeNormal)
	}
	c.authenticated.Store(true)
	if tc, ok := c.raw.(*trackedConn); ok {
		// The current connection is never evicted to make room for
		// unauthenticated ones.
		h.unauth.forget(tc)
	}
	h.cur.Store(c)
	close(h.connected)
	for _, id := range h.approvalSeq {
		if a := h.approvals[id]; a != nil && a.kind != kindTool {
			initial = append(initial, a.framesLocked(c)...)
		}
	}
	info := c.info
	if cb := h.opts.OnConnect; cb != nil {
		h.notifyLocked(func() { cb(info) })
	}
	h.mu.Unlock()

	if oldFirst {
		old.afterEnd(oldFailed)
	}
	h.log.Info("extbridge: extension connected", "version", c.info.Version, "origin", c.info.Origin, "replaced", old != nil)
	c.wg.Add(2)
	go c.writeLoop(initial)
	go c.pingLoop()
	return nil
}

// admitReplacementLocked decides whether newcomer c may replace the
// current connection old (h.mu held). With [ReplaceNewest], newest wins
// unless replacements have exceeded ReplaceLimit within ReplaceWindow: two
// browsers with the extension would otherwise replace each other forever,
// failing every command in between. The current connection is then kept,
// and newcomers are refused for as long as it stays connected (the storm
// ends with it): a cool-down that ran out would let the other browser take
// over again and restart the flapping. With [ReplaceKeepCurrent] newcomers
// are always refused while a connection is current. Each episode is logged
// once, with both versions: a refusal returns the attributes to log
// (outside h.mu), nil when this episode was logged already.
func (h *Hub) admitReplacementLocked(old, c *extConn) (bool, []any) {
	now := time.Now()
	refuse := func(why string) (bool, []any) {
		if h.flapLogged {
			return false, nil
		}
		h.flapLogged = true
		return false, []any{"why", why, "current_version", old.info.Version, "newcomer_version", c.info.Version,
			"newcomer_origin", c.info.Origin}
	}
	if h.opts.Replace == ReplaceKeepCurrent {
		return refuse("keep current")
	}
	if h.storm == old {
		return refuse("reconnect storm")
	}
	window := now.Add(-h.opts.ReplaceWindow)
	recent := h.replacements[:0]
	for _, t := range h.replacements {
		if t.After(window) {
			recent = append(recent, t)
		}
	}
	h.replacements = recent
	if len(recent) >= h.opts.ReplaceLimit {
		h.storm = old
		h.replacements = h.replacements[:0]
		h.flapLogged = false
		return refuse("reconnect storm")
	}
	h.replacements = append(h.replacements, now)
	h.flapLogged = false
	return true, nil
}

// readLoop is the serve loop's reading: it reads every frame while it
// holds the turn (readturn.go), and waits for the turn to come back after a
// result that left it free.
func (c *extConn) readLoop() {
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.readFailed(err)
			return
		}
		if c.received(typ, data) && c.turn.gate != nil && c.releaseTurn(nil) {
			if f := c.awaitTurn(); f != nil {
				c.received(websocket.MessageText, f)
			}
		}
	}
}

// readFailed ends the connection on a read error.
func (c *extConn) readFailed(err error) {
	code, cause := c.readFailure(err)
	c.terminate(cause, code, false)
	c.hub.log.Debug("extbridge: read ended", "err", err)
}

// received handles a frame read from an authenticated extension; it reports
// whether it was a browser_result.
func (c *extConn) received(typ websocket.MessageType, data []byte) bool {
	c.touch()
	if c.endedFlag.Load() {
		// Replaced or closing: the socket stays open only for the close
		// handshake, and nothing it still sends is acted on.
		c.ignored("connection ended", "", len(data), nil)
		return false
	}
	if typ != websocket.MessageText {
		c.hub.log.Debug("extbridge: ignored binary frame", "size", len(data))
		return false
	}
	return c.dispatch(data)
}

// readFailure turns the error that ended the read loop into the cause the
// failed commands and OnDisconnect report, and the close code to send: a
// frame over the read limit is a *[FrameTooLargeError], a close frame from
// the extension is a *[PeerClosedError], anything else (EOF, reset, a
// protocol error) is reported with its own text.
func (c *extConn) readFailure(err error) (websocket.StatusCode, error) {
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return websocket.StatusMessageTooBig, &FrameTooLargeError{Limit: c.hub.opts.ReadLimit}
	}
	if code := websocket.CloseStatus(err); code != -1 {
		return closeNormal, &PeerClosedError{Code: int(code)}
	}
	return closeNormal, &readError{err}
}

// readError is a read failure other than a close frame or an oversized
// frame: the connection was lost (EOF, a reset) or the extension broke the
// WebSocket protocol. It wraps the transport's error.
type readError struct{ err error }

func (e *readError) Error() string {
	if connectionLost(e.err) {
		return "connection lost: " + e.err.Error()
	}
	return "protocol error: " + e.err.Error()
}

func (e *readError) Unwrap() error { return e.err }

// connectionLost reports whether err is the socket ending rather than bad
// bytes on it.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *extConn) touch() { c.lastSeen.Store(time.Now().UnixNano()) }

// writeLoop is the connection's writer goroutine: it writes the initial
// frames (holding wmu since activate), then the queued frames as they come.
// Each write has a deadline; a failed or stalled write ends the connection.
func (c *extConn) writeLoop(initial [][]byte) {
	defer c.wg.Done()
	ok := true
	for _, f := range initial {
		if ok = c.write(f); !ok {
			break
		}
	}
	c.wmu.Unlock()
	for ok {
		select {
		case <-c.wake:
			c.wmu.Lock()
			ok = c.drain()
			c.wmu.Unlock()
		case <-c.done:
			c.wmu.Lock()
			defer c.wmu.Unlock()
			if c.graceful {
				for drained := false; !drained; {
					select {
					case f := <-c.out:
						if !c.write(f) {
							return
						}
					default:
						drained = true
					}
				}
			}
			c.closeHandshake(c.endCode, closeReason(c.endErr))
			return
		}
	}
}

// drain writes the queued frames (wmu held). Runs of small frames are sent
// in one system call, at most maxCorkFrames frames or maxCorkBytes bytes
// at a time.
func (c *extConn) drain() bool {
	for {
		var f []byte
		select {
		case f = <-c.out:
		default:
			return true
		}
		if c.cork == nil || len(c.out) == 0 || len(f) > maxCorkFrame {
			if !c.write(f) {
				return false
			}
			continue
		}
		if !c.writeBurst(f) {
			return false
		}
	}
}

// writeBurst writes f and the small frames queued after it in one system
// call.
func (c *extConn) writeBurst(f []byte) bool {
	c.cork.setCork()
	ok := c.write(f)
	for n, size := 1, len(f); ok && n < maxCorkFrames && size < maxCorkBytes; n++ {
		var next []byte
		select {
		case next = <-c.out:
		default:
		}
		if next == nil {
			break
		}
		ok = c.write(next)
		size += len(next)
		if len(next) > maxCorkFrame {
			break
		}
	}
	c.raw.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
	err := c.cork.uncork()
	c.raw.SetWriteDeadline(time.Time{})
	if ok && err != nil {
		c.terminate(errStalled, closePolicy, true)
		c.hub.log.Warn("extbridge: write failed; dropping extension", "err", err)
		return false
	}
	return ok
}

func (c *extConn) write(frame []byte) bool {
	var err error
	if c.raw != nil {
		// A deadline on the socket costs less than a context per frame.
		c.raw.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
		err = c.ws.Write(context.Background(), websocket.MessageText, frame)
		// Pings and pongs are written outside this loop and bound their
		// own writes: do not leave an expiring deadline behind.
		c.raw.SetWriteDeadline(time.Time{})
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), c.hub.opts.WriteTimeout)
		err = c.ws.Write(ctx, websocket.MessageText, frame)
		cancel()
	}
	if err != nil {
		c.terminate(errStalled, closePolicy, true)
		c.hub.log.Warn("extbridge: write failed; dropping extension", "err", err)
		return false
	}
	return true
}

// closeHandshake sends a close frame and waits for the answer, at most
// WriteTimeout: the library bounds its wait for the close frame, but not
// its skipping of the rest of a frame it stopped reading (one over the
// read limit), which a peer that stops sending would make last forever.
func (c *extConn) closeHandshake(code websocket.StatusCode, reason string) {
	if c.raw != nil {
		c.raw.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
	}
	giveUp := time.AfterFunc(c.hub.opts.WriteTimeout, c.kill)
	defer giveUp.Stop()
	c.ws.Close(code, reason)
}

func (c *extConn) pingLoop() {
	defer c.wg.Done()
	h := c.hub
	t := time.NewTicker(h.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, c.lastSeen.Load())) >= h.opts.LivenessTimeout {
			c.terminate(errLiveness, closePolicy, true)
			h.log.Warn("extbridge: extension unresponsive; dropping it")
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, h.opts.PingInterval)
		if c.ws.Ping(ctx) == nil {
			c.touch()
		}
		cancel()
	}
}

// terminate ends the connection: it stops being current, its in-flight
// browser commands fail at once, its context is cancelled and the writer
// sends the close frame. With hard set the socket is closed outright. Only
// the first call's reason counts; a later hard call still kills the socket.
func (c *extConn) terminate(cause error, code websocket.StatusCode, hard bool) {
	h := c.hub
	h.mu.Lock()
	failed, first := c.endLocked(cause, code)
	h.mu.Unlock()
	if first {
		c.afterEnd(failed)
	}
	if hard {
		c.kill()
	}
}

// endLocked does the part of ending that must be atomic with the hub's
// state (h.mu held). It reports whether this was the first call.
func (c *extConn) endLocked(cause error, code websocket.StatusCode) ([]*pendingCall, bool) {
	h := c.hub
	if c.ended {
		return nil, false
	}
	c.ended = true
	c.endedFlag.Store(true)
	c.endErr, c.endCode = cause, code
	c.graceful = errors.Is(cause, ErrClosed)
	if h.cur.Load() == c {
		h.cur.Store(nil)
		h.connected = make(chan struct{})
	}
	if h.storm == c {
		h.storm = nil // the kept connection ended: so did the storm
	}
	var failed []*pendingCall
	for id, call := range h.calls {
		if call.conn == c {
			delete(h.calls, id)
			c.pending.Add(-1)
			failed = append(failed, call)
		}
	}
	if c.authenticated.Load() {
		if cb := h.opts.OnDisconnect; cb != nil {
			info, err := c.info, error(&disconnectedError{cause})
			h.notifyLocked(func() { cb(info, err) })
		}
	}
	return failed, true
}

// afterEnd completes the first terminate, outside h.mu.
func (c *extConn) afterEnd(failed []*pendingCall) {
	for _, call := range failed {
		call.finish(callOutcome{err: &disconnectedError{c.endErr}})
	}
	close(c.done)
	c.cancel()
	c.reclaimTurn() // the serve loop reads until the socket is closed
	if c.authenticated.Load() {
		c.hub.log.Info("extbridge: extension disconnected", "reason", c.endErr)
	}
}

// kill closes the socket without a close handshake, which unblocks every
// read and write on it at once.
func (c *extConn) kill() {
	if c.raw != nil {
		c.raw.Close()
		return
	}
	c.ws.CloseNow()
}

// send queues a frame for the writer, waiting while the queue is full.
func (c *extConn) send(ctx context.Context, frame []byte) error {
	select {
	case <-c.done:
		return ErrDisconnected
	default:
	}
	select {
	case c.out <- frame:
	case <-c.done:
		return ErrDisconnected
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case c.wake <- struct{}{}:
	default: // the writer is already woken
	}
	return nil
}

// sendNow writes frame in place when nothing is being written or queued,
// saving the hand-off to the writer goroutine (a browser command's
// latency); otherwise it queues it as send does. The write has the same
// deadline as the writer's, so it is taken only when ctx allows that long:
// a write to a socket the extension has stopped reading blocks until then.
func (c *extConn) sendNow(ctx context.Context, frame []byte) error {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < c.hub.opts.WriteTimeout {
		return c.send(ctx, frame)
	}
	if c.wmu.TryLock() {
		if len(c.out) == 0 {
			if c.endedFlag.Load() {
				c.wmu.Unlock()
				return ErrDisconnected
			}
			ok := c.write(frame)
			c.wmu.Unlock()
			if !ok {
				return ErrDisconnected
			}
			return nil
		}
		c.wmu.Unlock()
	}
	return c.send(ctx, frame)
}

// sendJSON marshals v and queues it under the connection's context.
func (c *extConn) sendJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.hub.log.Error("extbridge: encoding frame", "err", err)
		return
	}
	if err := c.send(c.ctx, b); err != nil {
		c.hub.log.Debug("extbridge: frame not sent", "err", err)
	}
}

func (c *extConn) activeTools() int {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	return len(c.tools)
}

func closeReason(err error) string {
	switch {
	case errors.Is(err, errHelloTimeout):
		return "hello timeout"
	case errors.Is(err, errBadToken):
		return "authentication failed"
	case errors.Is(err, errHelloExpected):
		return "expected browser_hello"
	case errors.Is(err, errHelloUTF8):
		return "browser_hello is not valid UTF-8"
	case errors.Is(err, errAnotherBrowser):
		return "another browser is connected"
	case errors.Is(err, errReplaced):
		return "replaced by a new connection"
	case errors.Is(err, errLiveness):
		return "liveness timeout"
	case errors.Is(err, ErrClosed):
		return "hub shutting down"
	case errors.Is(err, ErrFrameTooLarge):
		return "frame exceeds the read limit"
	default:
		return ""
	}
}

// checkOrigin applies the origin rules: no Origin (unless RequireOrigin),
// or an extension scheme with a well-formed id, pinned when ExtensionIDs is
// set. It returns the Origin header.
func (h *Hub) checkOrigin(r *http.Request) (string, bool) {
	values := r.Header.Values("Origin")
	switch len(values) {
	case 0:
		return "", !h.opts.RequireOrigin
	case 1:
	default:
		return strings.Join(values, ","), false
	}
	origin := values[0]
	id, ok := extensionID(origin)
	if !ok {
		return origin, false
	}
	if len(h.opts.ExtensionIDs) == 0 {
		return origin, true
	}
	for _, pinned := range h.opts.ExtensionIDs {
		if subtle.ConstantTimeCompare([]byte(pinned), []byte(id)) == 1 {
			return origin, true
		}
	}
	return origin, false
}

var extensionSchemes = []string{"chrome-extension://", "moz-extension://", "safari-web-extension://"}

// extensionID returns the id of an extension origin such as
// chrome-extension://abcdefghijklmnopabcdefghijklmnop.
func extensionID(origin string) (string, bool) {
	for _, scheme := range extensionSchemes {
		if len(origin) > len(scheme) && strings.EqualFold(origin[:len(scheme)], scheme) {
			id := origin[len(scheme):]
			return id, validExtensionID(id)
		}
	}
	return "", false
}

// validExtensionID accepts the id forms of Chrome (32 letters a-p),
// Firefox and Safari (UUIDs): letters, digits, '-', '.', '_'.
func validExtensionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		default:
			return false
		}
	}
	return true
}

// cleanVersion keeps a printable prefix of the extension's version string.
func cleanVersion(v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, v)
	return truncate(v, maxVersionLen)
}

// logFrame logs an ignored frame without its payload.
func (c *extConn) ignored(why string, typ string, size int, err error) {
	c.hub.log.Debug("extbridge: ignored frame", "why", why, "type", truncate(typ, 64), "size", size, slog.Any("err", err))
}
