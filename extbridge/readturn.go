package extbridge

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The reading turn. A connection has one reader at a time, but not always
// the same goroutine. Its handler goroutine (the serve loop) reads while
// anything may come that nobody waits for. A browser command's caller
// reads its own result when the turn is free, so that the result wakes the
// caller from the socket directly instead of through a second goroutine:
// on a machine with an idle core, that hand-off (the reader readying the
// caller, which makes the runtime wake a second thread) was most of a
// command's round trip over loopback (docs/benchmarks.md, extbridge).
//
// The turn is free only after a result has been read, while no call is
// pending on the connection and nothing is buffered, and only on a socket
// that takes read deadlines (readTurn.gate is nil otherwise). A caller that
// finds it free takes it; a caller that does not waits for the serve loop to
// hand it its result, as before. A free turn goes back to the serve loop
// after turnIdle, or at once when the connection ends, so a frame sent while
// the turn is free is read at most turnIdle late. A caller that holds the
// turn:
//
//   - dispatches only browser_result frames itself; any other frame (chat,
//     tool requests, the panel's requests), whose handling runs [Backend]
//     methods, is handed with the turn to the serve loop;
//   - reads only whole, unfragmented text frames that fit the gate's buffer
//     and are already in it, so it never blocks inside the WebSocket
//     library; it waits for them in the gate, where its context, the hub's
//     wait and the connection's end interrupt it (a read deadline in the
//     past, set only while it waits there) without losing a byte;
//   - hands the turn to the serve loop on anything else (control frames,
//     large or fragmented frames, errors) and when it stops.
const turnIdle = time.Millisecond

// gateSize is the gate's buffer: frames up to this size (header included)
// can be read by a caller.
const gateSize = 8 << 10

// frameGate sits between the WebSocket library's buffered reader and the
// socket. It passes up at most one frame per Read, so that the library
// never buffers the start of the next frame: between messages every
// unread byte is in the gate, where a caller can see whether a whole frame
// has arrived.
type frameGate struct {
	conn net.Conn
	mu   sync.Mutex // held by whoever reads: the turn's holder, or the library's close handshake
	buf  []byte
	r, w int
	left int64 // bytes of the current frame not passed up yet; 0 between frames
	err  error // the socket's error, returned once the bytes before it are passed up
}

func newFrameGate(conn net.Conn, buffered []byte) *frameGate {
	g := &frameGate{conn: conn, buf: make([]byte, max(gateSize, len(buffered)))}
	g.w = copy(g.buf, buffered)
	return g
}

// frameHeader reads a WebSocket frame header (RFC 6455 section 5.2) at the
// start of b: the frame's whole length and its first byte (FIN, RSV and
// opcode). ok is false while the header is incomplete. A length beyond
// int64 counts as the largest one: the library refuses the frame.
func frameHeader(b []byte) (total int64, first byte, ok bool) {
	if len(b) < 2 {
		return 0, 0, false
	}
	n := 2
	l := int64(b[1] & 0x7f)
	switch l {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b[1]&0x80 != 0 {
		n += 4 // masking key
	}
	if len(b) < n {
		return 0, 0, false
	}
	switch l {
	case 126:
		l = int64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		u := binary.BigEndian.Uint64(b[2:])
		if u > math.MaxInt64-uint64(n) {
			u = math.MaxInt64 - uint64(n)
		}
		l = int64(u)
	}
	return int64(n) + l, b[0], true
}

// Read is the library's: it passes up buffered bytes of the current frame,
// reading the socket when there are none.
func (g *frameGate) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.left == 0 {
			if total, _, ok := frameHeader(g.buf[g.r:g.w]); ok {
				g.left = total
			} else if g.err != nil {
				if g.r < g.w { // a partial header before the error
					n := copy(p, g.buf[g.r:g.w])
					g.r += n
					return n, nil
				}
				return 0, g.err
			} else {
				g.fill()
				continue
			}
		}
		if g.r < g.w {
			n := copy(p[:min(int64(len(p)), g.left)], g.buf[g.r:g.w])
			g.r += n
			g.left -= int64(n)
			return n, nil
		}
		if g.err != nil {
			return 0, g.err
		}
		if len(p) >= len(g.buf) {
			// A large payload goes from the socket to the library's buffer
			// directly.
			n, err := g.conn.Read(p[:min(int64(len(p)), g.left)])
			g.left -= int64(n)
			if err != nil {
				g.err = err
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		g.fill()
	}
}

// fill reads the socket into the buffer (g.mu held).
func (g *frameGate) fill() {
	g.compact()
	n, err := g.conn.Read(g.buf[g.w:])
	g.w += n
	if err != nil {
		g.err = err
	}
}

func (g *frameGate) compact() {
	if g.r > 0 {
		g.w = copy(g.buf, g.buf[g.r:g.w])
		g.r = 0
	}
}

// idle reports whether nothing is buffered and nobody reads. It does not
// wait for a reader: the library's close handshake may hold the lock for as
// long as a silent peer leaves it waiting for the close frame.
func (g *frameGate) idle() bool {
	if !g.mu.TryLock() {
		return false
	}
	defer g.mu.Unlock()
	return g.r == g.w
}

// What a caller holding the turn finds in the gate.
type gateState uint8

const (
	gateFrame       gateState = iota // a whole small text frame: the library reads it without blocking
	gateOther                        // anything else: the serve loop reads it
	gateInterrupted                  // the caller must stop
)

// await waits, interruptibly, until the gate holds a whole text frame that
// fits its buffer, or something else arrives.
func (g *frameGate) await(t *readTurn) gateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		if g.left != 0 || g.err != nil {
			return gateOther
		}
		if total, first, ok := frameHeader(g.buf[g.r:g.w]); ok {
			if first != 0x81 || total > int64(len(g.buf)) { // not FIN + text, or too large
				return gateOther
			}
			if total <= int64(g.w-g.r) {
				return gateFrame
			}
		}
		if !t.beginWait() {
			return gateInterrupted
		}
		g.compact()
		n, err := g.conn.Read(g.buf[g.w:])
		interrupted := t.endWait()
		g.w += n
		if err != nil && !(interrupted && errors.Is(err, os.ErrDeadlineExceeded)) {
			g.err = err
		}
		if interrupted {
			return gateInterrupted
		}
	}
}

type turnHolder uint8

const (
	turnServe  turnHolder = iota // the serve loop reads
	turnFree                     // nobody reads; the next caller may
	turnCaller                   // a command's caller reads
)

// readTurn says who reads a connection (see turnIdle).
type readTurn struct {
	gate *frameGate // nil: callers never read

	mu        sync.Mutex
	holder    turnHolder
	caller    *pendingCall // the call whose caller holds the turn
	waiting   bool         // the caller is in the gate's socket read
	interrupt bool         // the caller must stop reading
	deadline  bool         // a read deadline in the past is set on the socket
	handed    []byte       // a frame the caller read for the serve loop
	wake      chan struct{}
	timer     *time.Timer // gives a free turn back to the serve loop
}

// aLongTimeAgo is a read deadline in the past: it interrupts a read.
var aLongTimeAgo = time.Unix(1, 0)

func (t *readTurn) beginWait() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.interrupt {
		return false
	}
	t.waiting = true
	return true
}

// endWait ends a wait in the gate's socket read; it clears the deadline an
// interrupt set, so that no later read sees it, and reports whether the
// caller was interrupted.
func (t *readTurn) endWait() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiting = false
	if t.deadline {
		t.deadline = false
		t.gate.conn.SetReadDeadline(time.Time{})
	}
	return t.interrupt
}

// interruptTurn stops call's caller from reading, if it holds the turn.
func (c *extConn) interruptTurn(call *pendingCall) {
	t := &c.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holder != turnCaller || t.caller != call || t.interrupt {
		return
	}
	t.interrupt = true
	if t.waiting && t.gate.conn.SetReadDeadline(aLongTimeAgo) == nil {
		t.deadline = true
	}
}

// takeTurn gives the turn to call's caller if it is free.
func (c *extConn) takeTurn(call *pendingCall) bool {
	t := &c.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holder != turnFree {
		return false
	}
	t.holder, t.caller, t.interrupt = turnCaller, call, false
	return true
}

// releaseTurn ends the holder's turn (a caller's, or the serve loop's after
// a result): the turn is left free when nothing may need a reader soon,
// and goes to the serve loop otherwise, with handed, a frame to dispatch.
// It reports whether the turn was left free.
func (c *extConn) releaseTurn(handed []byte) bool {
	t := &c.turn
	empty := handed == nil && t.gate.idle() // before t.mu: the gate's lock comes first
	t.mu.Lock()
	defer t.mu.Unlock()
	t.caller, t.interrupt = nil, false
	if empty && c.pending.Load() == 0 && !c.endedFlag.Load() {
		t.holder = turnFree
		if t.timer == nil {
			t.timer = time.AfterFunc(turnIdle, c.reclaimTurn)
		} else {
			t.timer.Reset(turnIdle)
		}
		return true
	}
	wasServe := t.holder == turnServe
	t.holder, t.handed = turnServe, handed
	if !wasServe {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	return false
}

// stopTurnTimer stops the free turn's timer when the connection is over.
func (c *extConn) stopTurnTimer() {
	t := &c.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
}

// reclaimTurn gives a free turn back to the serve loop.
func (c *extConn) reclaimTurn() {
	t := &c.turn
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holder != turnFree {
		return
	}
	t.holder = turnServe
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// awaitTurn is the serve loop's wait for the turn to come back; it returns
// the frame handed with it, if any.
func (c *extConn) awaitTurn() []byte {
	t := &c.turn
	for {
		<-t.wake
		t.mu.Lock()
		if t.holder == turnServe {
			f := t.handed
			t.handed = nil
			t.mu.Unlock()
			return f
		}
		t.mu.Unlock()
	}
}

// readAsCaller reads frames for call's caller, which holds the turn, until
// the call is over or the turn must go to the serve loop; it always gives
// the turn up. The caller then waits for its outcome as any caller does.
func (c *extConn) readAsCaller(call *pendingCall, done <-chan struct{}) {
	for {
		select {
		case <-call.done:
			c.releaseTurn(nil)
			return
		case <-done:
			c.releaseTurn(nil)
			return
		default:
		}
		if c.turn.gate.await(&c.turn) != gateFrame {
			c.releaseTurn(nil)
			return
		}
		// A whole frame is buffered: the library reads it without blocking.
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.readFailed(err)
			c.releaseTurn(nil)
			return
		}
		c.touch()
		if c.endedFlag.Load() || typ != websocket.MessageText {
			c.releaseTurn(data)
			return
		}
		_, frame, err := decodeInbound(data)
		f, ok := frame.(*resultFrame)
		if err != nil || !ok {
			c.releaseTurn(data)
			return
		}
		c.hub.completeCall(c, f)
	}
}
