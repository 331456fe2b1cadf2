package wire

import (
	"encoding/binary"
	"errors"
	"sync"

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

// FrameWriter writes batches of encoded frames: *nativemsg.Writer.
type FrameWriter interface {
	WriteFrames(parts [][]byte) error
	Limit() int
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
}

// Queue serializes frames onto one writer from any number of goroutines.
// Push never blocks on I/O: it appends the frame and wakes the writing
// goroutine (Run), which writes everything queued since its last write in
// one batch, so concurrent senders share system calls.
//
// Small frames are copied into a buffer the queue owns; the two buffers
// alternate between the senders and the writer, so steady-state pushing
// allocates nothing.
type Queue struct {
	w          FrameWriter
	frameLimit int // the largest frame body accepted
	opts       QueueOptions

	mu        sync.Mutex
	own       []byte    // bytes copied in since the last segment boundary
	segs      [][]byte  // completed segments: parts of own and borrowed bodies
	rels      []*Buffer // to release once segs are written
	spareRels []*Buffer
	ownOff    int // start of the open region of own
	queued    int // bytes in segs and own[ownOff:]
	closed    bool
	err       error
	idle      bool          // the writer is waiting and nothing is queued
	spare     []byte        // the other own buffer, free while not writing
	signal    chan struct{} // wakes Run; capacity 1
	drained   chan struct{} // made by Drained while busy; closed when the queue empties
}

// NewQueue returns a Queue writing to w, which also sets the largest frame
// accepted.
func NewQueue(w FrameWriter, opts QueueOptions) *Queue {
	return &Queue{
		w:          w,
		frameLimit: w.Limit(),
		opts:       opts,
		idle:       true,
		signal:     make(chan struct{}, 1),
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
	n := len(head) + len(body) + len(tail)
	if n > q.frameLimit {
		rel1.Release()
		rel2.Release()
		return &nativemsg.FrameSizeError{Size: uint64(n), Limit: q.frameLimit}
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
		rel1.Release()
		rel2.Release()
		return err
	}
	q.own = binary.LittleEndian.AppendUint32(q.own, uint32(n))
	q.own = append(q.own, head...)
	copied := len(body) <= CopyLimit || q.opts.CopyAll
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
	wake := q.idle
	q.idle = false
	q.mu.Unlock()
	if wake {
		select {
		case q.signal <- struct{}{}:
		default:
		}
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

// Drained returns a channel closed once nothing is waiting to be written
// (at once when that is already so) or the queue is closed.
func (q *Queue) Drained() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.idle {
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
		for len(q.segs) == 0 && q.ownOff == len(q.own) && !q.closed {
			q.idle = true
			q.notifyDrained()
			q.mu.Unlock()
			<-q.signal
			q.mu.Lock()
		}
		if q.closed {
			err := q.err
			q.mu.Unlock()
			return err
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
		q.queued = 0
		q.mu.Unlock()

		err := q.w.WriteFrames(batch)
		clear(batch) // drop references to borrowed bodies
		// Written or not, the bodies are no longer needed.
		for _, r := range rels {
			r.Release()
		}
		clear(rels)

		q.mu.Lock()
		q.spareRels = rels[:0]
		if cap(written) <= maxRetained {
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
		q.dropQueued()
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// dropQueued discards the frames waiting, releasing what they borrowed,
// once the queue is closed. q.mu is held.
func (q *Queue) dropQueued() {
	for _, r := range q.rels {
		r.Release()
	}
	q.segs, q.own, q.rels = nil, nil, nil
	q.ownOff, q.queued = 0, 0
	q.notifyDrained()
}
