package wire

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// CopyLimit is the largest body a Queue copies into its own buffer by
// default; larger bodies are written from the caller's memory, which must
// then stay unchanged until written.
const CopyLimit = 32 << 10

// ErrQueueFull is returned by Push when the bytes waiting to be written
// exceed the queue's limit.
var ErrQueueFull = errors.New("write queue full")

// ErrQueueClosed is returned by Push after Close or a write error.
var ErrQueueClosed = errors.New("write queue closed")

// FrameWriter writes batches of encoded frames: a *nativemsg.Writer
// through NativeWriter.
type FrameWriter interface {
	WriteFrames(parts [][]byte) error
	Limit() int
}

// NativeWriter returns w as a FrameWriter, its batch writing reached
// through internal/nmrelay (it is not nativemsg's public API).
func NativeWriter(w *nativemsg.Writer) FrameWriter {
	return nativeWriter{w, nmrelay.Writer(w)}
}

type nativeWriter struct {
	*nativemsg.Writer
	nmrelay.FrameWriter
}

// NativeRawConn returns the raw connection under w, or nil when it has
// none (in-memory links).
func NativeRawConn(w *nativemsg.Writer) syscall.RawConn {
	rc, err := nmrelay.Writer(w).SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// QueueOptions configures a Queue. The zero value is the default.
type QueueOptions struct {
	// MaxQueued bounds the bytes waiting to be written; beyond it Push
	// returns ErrQueueFull. A single frame larger than the bound is still
	// accepted when nothing else is waiting. Zero means no bound.
	MaxQueued int
	// CopyAll makes Push copy every body, however large, so that its
	// caller may reuse the memory at once. By default bodies over
	// CopyLimit are borrowed until written.
	CopyAll bool
	// Direct is the raw connection under the FrameWriter. When it is in
	// non-blocking mode (as every socket of Go's net package is, and
	// pipes that Go's poller serves), Send
	// writes from the calling goroutine when no write is in progress and
	// the frames waiting are all in the queue's own buffer, as far as the
	// peer takes them without waiting; Run writes the rest. That saves
	// waking Run, and a thread switch, per frame. Nil, or a connection in
	// blocking mode, means Run writes everything.
	Direct syscall.RawConn
	// Budget, when set, bounds the bytes this queue and the budget's
	// other holders hold together: every frame is reserved from it when
	// pushed (Push may then evict another holder, the one that holds the
	// most, or fail with ErrOverBudget when that is this queue) and
	// released once written or dropped. Bytes count until written, those
	// of a write in progress included.
	Budget *Budget
	// OnEvict is called when the budget evicts the queue, after it is
	// closed (Push then fails with ErrQueueClosed), with the bytes it held.
	// It must not block, nor take locks held around Push.
	OnEvict func(held int64)
}

// Queue serializes frames onto one writer from any number of goroutines.
// Push and Send never block on I/O: Push appends the frame and wakes the
// writing goroutine (Run), which writes everything queued since its last
// write in one batch, so concurrent senders share system calls; Send may
// also write at once without waiting (see QueueOptions.Direct).
//
// Small frames are copied into a buffer the queue owns; the two buffers
// alternate between the senders and the writer, so steady-state pushing
// allocates nothing.
type Queue struct {
	w          FrameWriter
	frameLimit int // the largest frame body accepted
	opts       QueueOptions
	direct     *directWriter // nil without QueueOptions.Direct

	mu        sync.Mutex
	own       []byte    // bytes copied in since the last segment boundary
	segs      [][]byte  // completed segments: parts of own and borrowed bodies
	rels      []*Buffer // to release once segs are written
	spareRels []*Buffer
	ownOff    int // start of the open region of own
	// partial is the unwritten rest of a direct write, which ends inside
	// a frame: it goes out before anything else, as raw bytes, since it
	// does not start at a frame boundary.
	partial []byte
	queued  int // bytes in partial, segs and own[ownOff:]
	// held is queued plus the bytes of a write in progress: what the
	// queue holds against its budget. heldA mirrors it for Held.
	held   int64
	heldA  atomic.Int64
	sinceA atomic.Uint64 // Since: the budget's tick of the last progress
	closed bool
	// closedA mirrors closed, for Push to see without the lock that a
	// closed queue asks the budget for nothing (its reservation could
	// evict another client on behalf of one already gone).
	closedA atomic.Bool
	err     error
	writing bool          // a batch is being written, by Run or by Send
	parked  bool          // Run waits for signal
	spare   []byte        // the other own buffer, free while not writing
	signal  chan struct{} // wakes Run; capacity 1
	drained chan struct{} // made by Drained while busy; closed when the queue empties
}

// NewQueue returns a Queue writing to w, which also sets the largest frame
// accepted.
func NewQueue(w FrameWriter, opts QueueOptions) *Queue {
	q := &Queue{
		w:          w,
		frameLimit: w.Limit(),
		opts:       opts,
		signal:     make(chan struct{}, 1),
	}
	if opts.Direct != nil {
		q.direct = newDirectWriter(opts.Direct)
	}
	if opts.Budget != nil {
		opts.Budget.Add(q)
	}
	return q
}

// Held returns the bytes pushed and not yet written or dropped, a write
// in progress included.
func (q *Queue) Held() int64 { return q.heldA.Load() }

// Since returns the budget's tick at which the queue last wrote bytes or
// started holding any; 0 while it holds nothing.
func (q *Queue) Since() uint64 { return q.sinceA.Load() }

// Evict closes the queue, releasing what it holds, and calls
// QueueOptions.OnEvict, which says why. A Budget calls it.
func (q *Queue) Evict(error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.closedA.Store(true)
	held := q.held
	q.dropQueued()
	q.mu.Unlock()
	q.wake()
	if q.opts.OnEvict != nil {
		q.opts.OnEvict(held)
	}
}

// addHeld counts n more bytes held (n < 0: fewer), never below zero, and
// releases what is no longer held from the budget. q.mu is held.
func (q *Queue) addHeld(n int64) {
	if n < 0 {
		n = -min(-n, q.held)
	}
	q.held += n
	q.heldA.Store(q.held)
	if n < 0 && q.opts.Budget != nil {
		q.opts.Budget.Release(-n)
		// Bytes left the queue: progress, unless it is now empty.
		q.markProgress()
	}
}

// markProgress sets Since from the queue's bytes: a new tick while it
// holds some, 0 once it holds none. q.mu is held.
func (q *Queue) markProgress() {
	if q.held == 0 {
		q.sinceA.Store(0)
	} else {
		q.sinceA.Store(q.opts.Budget.Tick())
	}
}

func (q *Queue) wake() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Push queues one frame whose body is head, body and tail concatenated,
// preceded by its 4-byte little-endian length. head and tail are copied;
// body is copied when it is at most CopyLimit bytes (or CopyAll is set),
// else borrowed until written. Push takes over rel1 and rel2 (either may be
// nil), which hold body's memory: they are released once the frame no
// longer needs them, which is at once when the body was copied or Push
// fails, and otherwise once the frame is written or dropped by Close.
func (q *Queue) Push(head, body, tail []byte, rel1, rel2 *Buffer) error {
	return q.push(head, body, tail, rel1, rel2, false)
}

// Send is Push, except that with QueueOptions.Direct it may write the
// frame (and any others waiting) from the calling goroutine, without
// blocking, instead of waking Run.
func (q *Queue) Send(head, body, tail []byte, rel1, rel2 *Buffer) error {
	return q.push(head, body, tail, rel1, rel2, q.direct != nil)
}

func (q *Queue) push(head, body, tail []byte, rel1, rel2 *Buffer, direct bool) error {
	n := len(head) + len(body) + len(tail)
	if n > q.frameLimit {
		rel1.Release()
		rel2.Release()
		return &nativemsg.FrameSizeError{Size: uint64(n), Limit: q.frameLimit}
	}
	copied := len(body) <= CopyLimit || q.opts.CopyAll
	// What the frame holds until written: its bytes and, when the body is
	// borrowed, the whole buffers it keeps (a 256 KiB body can keep a
	// 512 KiB request buffer and a 512 KiB result buffer).
	cost := int64(n + 4)
	if !copied {
		cost += relCap(rel1) + relCap(rel2)
	}
	reserved := false
	if b := q.opts.Budget; b != nil && !q.closedA.Load() {
		// Reserved before q.mu is taken: it may evict another queue,
		// which takes that queue's lock. A closed queue reserves
		// nothing: it fails below.
		if err := b.Reserve(q, cost); err != nil {
			rel1.Release()
			rel2.Release()
			return err
		}
		reserved = true
	}
	q.mu.Lock()
	if q.closed || (q.opts.MaxQueued > 0 && q.queued > 0 && q.queued+n+4 > q.opts.MaxQueued) {
		err := ErrQueueFull
		if q.closed {
			err = q.err
			if err == nil {
				err = ErrQueueClosed
			}
		}
		q.mu.Unlock()
		if reserved {
			q.opts.Budget.Release(cost)
		}
		rel1.Release()
		rel2.Release()
		return err
	}
	if q.held == 0 && q.opts.Budget != nil {
		q.held = cost
		q.markProgress() // it starts holding bytes: its clock starts now
	} else {
		q.held += cost
	}
	q.heldA.Store(q.held)
	q.own = binary.LittleEndian.AppendUint32(q.own, uint32(n))
	q.own = append(q.own, head...)
	if copied {
		q.own = append(q.own, body...)
	} else {
		q.segs = append(q.segs, q.own[q.ownOff:], body)
		q.ownOff = len(q.own)
		if rel1 != nil {
			q.rels = append(q.rels, rel1)
		}
		if rel2 != nil {
			q.rels = append(q.rels, rel2)
		}
	}
	q.own = append(q.own, tail...)
	q.queued += n + 4
	if direct && !q.writing && len(q.segs) == 0 && q.partial == nil {
		q.writeDirect() // unlocks
	} else {
		q.wakeRun()
		q.mu.Unlock()
	}
	if copied {
		rel1.Release()
		rel2.Release()
	}
	return nil
}

// Queued reports the bytes waiting to be written.
func (q *Queue) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// wakeRun wakes Run if it waits and there is something for it to write.
// q.mu is held.
func (q *Queue) wakeRun() {
	if q.parked && !q.writing && q.queued > 0 {
		q.parked = false
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
}

// writeDirect writes what waits in q.own from the calling goroutine, as
// far as the peer takes it without waiting, and leaves the rest to Run.
// q.mu is held on entry and released on return.
func (q *Queue) writeDirect() {
	batch := q.own
	q.own, q.spare = q.spare[:0], nil
	q.queued = 0
	q.writing = true
	q.mu.Unlock()

	n, err := q.direct.tryWrite(batch)

	q.mu.Lock()
	q.writing = false
	q.addHeld(-int64(n))
	switch {
	case err != nil:
		q.fail(err)
	case q.closed:
		// Closed meanwhile: the rest is dropped like everything queued.
	case n < len(batch):
		// The rest goes first, before anything queued meanwhile.
		q.partial = batch[n:]
		q.queued += len(batch) - n
	case cap(batch) <= maxRetained && q.spare == nil:
		q.spare = batch[:0]
	}
	if q.queued == 0 {
		q.notifyDrained()
	}
	q.wakeRun()
	q.mu.Unlock()
}

// fail closes the queue after a write error. q.mu is held.
func (q *Queue) fail(err error) {
	if !q.closed {
		q.closed, q.err = true, err
		q.dropQueued()
	}
	select {
	case q.signal <- struct{}{}: // Run returns the error
	default:
	}
}

// Drained returns a channel closed once nothing is waiting to be written
// (at once when that is already so) or the queue is closed.
func (q *Queue) Drained() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || (q.queued == 0 && !q.writing) {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
	}
	return q.drained
}

// notifyDrained closes the channel Drained handed out, if any. q.mu is held.
func (q *Queue) notifyDrained() {
	if q.drained != nil {
		close(q.drained)
		q.drained = nil
	}
}

// Run writes queued frames until Close or a write error, which it returns
// (nil after Close). It must run in exactly one goroutine.
func (q *Queue) Run() error {
	var batch [][]byte
	for {
		q.mu.Lock()
		for (q.queued == 0 || q.writing) && !q.closed {
			if q.queued == 0 && !q.writing {
				q.notifyDrained()
			}
			q.parked = true
			q.mu.Unlock()
			<-q.signal
			q.mu.Lock()
		}
		q.parked = false
		if q.closed {
			err := q.err
			q.mu.Unlock()
			return err
		}
		if q.partial != nil {
			if err := q.writePartial(); err != nil {
				return err
			}
			continue
		}
		batch = append(batch[:0], q.segs...)
		if q.ownOff < len(q.own) {
			batch = append(batch, q.own[q.ownOff:])
		}
		written := q.own
		q.own, q.spare = q.spare[:0], nil
		q.segs, q.ownOff = q.segs[:0], 0
		rels := q.rels
		q.rels, q.spareRels = q.spareRels[:0], nil
		inWrite := q.queued
		q.queued = 0
		q.writing = true
		q.mu.Unlock()

		err := q.w.WriteFrames(batch)
		clear(batch) // drop references to borrowed bodies
		// Written or not, the bodies are no longer needed.
		for _, r := range rels {
			inWrite += int(relCap(r))
			r.Release()
		}
		clear(rels)

		q.mu.Lock()
		q.writing = false
		q.addHeld(-int64(inWrite))
		q.spareRels = rels[:0]
		if cap(written) <= maxRetained && q.spare == nil {
			q.spare = written[:0]
		}
		if err != nil && !q.closed {
			q.closed, q.err = true, err
			q.dropQueued()
			q.mu.Unlock()
			return err
		}
		q.mu.Unlock()
	}
}

// writePartial writes q.partial, waiting for the peer as needed. q.mu is
// held on entry and released on return.
func (q *Queue) writePartial() error {
	rest := q.partial
	q.partial = nil
	q.queued -= len(rest)
	q.writing = true
	q.mu.Unlock()

	err := q.direct.writeAll(rest)

	q.mu.Lock()
	defer q.mu.Unlock()
	q.writing = false
	q.addHeld(-int64(len(rest)))
	if err != nil && !q.closed {
		q.closed, q.err = true, err
		q.dropQueued()
		return err
	}
	return nil
}

// relCap returns the memory r keeps: its capacity (0 for nil).
func relCap(r *Buffer) int64 {
	if r == nil {
		return 0
	}
	return int64(cap(r.B))
}

// maxRetained bounds the copy buffer kept between batches.
const maxRetained = 1 << 20

// Close stops the queue: pending frames are dropped, Push fails, and Run
// returns once its current write (if any) ends. Closing the writer is the
// caller's job: a write blocked on a peer that does not read ends only
// when its connection is closed. Close is idempotent.
func (q *Queue) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		q.closedA.Store(true)
		q.dropQueued()
	}
	q.mu.Unlock()
	if q.opts.Budget != nil {
		q.opts.Budget.Remove(q)
	}
	q.wake()
}

// dropQueued discards the frames waiting, releasing what they borrowed,
// once the queue is closed. q.mu is held.
func (q *Queue) dropQueued() {
	for _, r := range q.rels {
		r.Release()
	}
	q.segs, q.own, q.rels, q.partial = nil, nil, nil, nil
	q.ownOff, q.queued = 0, 0
	// A write in progress is counted as dropped too: the connection is
	// being closed, which ends it.
	q.addHeld(-q.held)
	q.notifyDrained()
}
