package wire

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// CopyLimit is the largest body a Queue copies into its own buffer; larger
// bodies are written from the caller's slice, which must then stay
// unchanged until written.
const CopyLimit = 32 << 10

// ErrQueueFull is returned by Push when the bytes waiting to be written
// exceed the queue's limit.
var ErrQueueFull = errors.New("write queue full")

// ErrQueueClosed is returned by Push after Close or a write error.
var ErrQueueClosed = errors.New("write queue closed")

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
	limit      int // bytes queued beyond which Push refuses; 0 = none

	mu        sync.Mutex
	own       []byte     // bytes copied in since the last segment boundary
	segs      [][]byte   // completed segments: parts of own and borrowed bodies
	rels      []Releaser // to release once segs are written
	spareRels []Releaser
	ownOff    int // start of the open region of own
	queued    int // bytes in segs and own[ownOff:]
	closed    bool
	err       error
	idle      bool          // the writer is waiting and nothing is queued
	spare     []byte        // the other own buffer, free while not writing
	signal    chan struct{} // wakes Run; capacity 1
	drained   chan struct{} // closed and replaced when the queue empties
}

// FrameWriter writes batches of encoded frames: *nativemsg.Writer.
type FrameWriter interface {
	WriteFrames(parts [][]byte) error
	Limit() int
}

// NewQueue returns a Queue writing to w, which also sets the largest frame
// accepted. limit bounds the bytes waiting (0: no bound); a single frame
// larger than limit is still accepted when nothing else is waiting.
func NewQueue(w FrameWriter, limit int) *Queue {
	return &Queue{
		w:          w,
		frameLimit: w.Limit(),
		limit:      limit,
		idle:       true,
		signal:     make(chan struct{}, 1),
		drained:    make(chan struct{}),
	}
}

// Frame is one frame to queue: its body is the concatenation of Head,
// Body and Tail. Head and Tail are always copied. Body is copied when at
// most CopyLimit bytes or when CopyBody is set, else borrowed until
// written. Release holds up to two things to release once the frame's
// bytes are no longer needed (after the copy, or after the write); they
// are not released when Push fails or the queue is closed with the frame
// still waiting (the garbage collector then takes them).
type Frame struct {
	Head, Body, Tail []byte
	CopyBody         bool
	Release          [2]Releaser
}

// Push queues f, preceded by its 4-byte little-endian length.
func (q *Queue) Push(f *Frame) error {
	n := len(f.Head) + len(f.Body) + len(f.Tail)
	if n > q.frameLimit {
		return &nativemsg.FrameSizeError{Size: uint64(n), Limit: q.frameLimit}
	}
	q.mu.Lock()
	if q.closed {
		err := q.err
		q.mu.Unlock()
		if err == nil {
			err = ErrQueueClosed
		}
		return err
	}
	if q.limit > 0 && q.queued > 0 && q.queued+n+4 > q.limit {
		q.mu.Unlock()
		return ErrQueueFull
	}
	q.own = binary.LittleEndian.AppendUint32(q.own, uint32(n))
	q.own = append(q.own, f.Head...)
	copied := len(f.Body) <= CopyLimit || f.CopyBody
	if copied {
		q.own = append(q.own, f.Body...)
	} else {
		q.segs = append(q.segs, q.own[q.ownOff:])
		q.segs = append(q.segs, f.Body)
		q.ownOff = len(q.own)
		for _, r := range f.Release {
			if r != nil {
				q.rels = append(q.rels, r)
			}
		}
	}
	q.own = append(q.own, f.Tail...)
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
		for _, r := range f.Release {
			if r != nil {
				r.Release()
			}
		}
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
	return q.drained
}

// Run writes queued frames until Close or a write error, which it returns
// (nil after Close). It must run in exactly one goroutine.
func (q *Queue) Run() error {
	var batch [][]byte
	for {
		q.mu.Lock()
		for len(q.segs) == 0 && q.ownOff == len(q.own) && !q.closed {
			q.idle = true
			close(q.drained)
			q.drained = make(chan struct{})
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
		if err == nil {
			for _, r := range rels {
				r.Release()
			}
		}
		clear(rels)

		q.mu.Lock()
		q.spareRels = rels[:0]
		if cap(written) <= maxRetained {
			q.spare = written[:0]
		}
		if err != nil && !q.closed {
			q.closed, q.err = true, err
			close(q.drained)
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
		q.segs, q.own, q.rels = nil, nil, nil
		q.ownOff, q.queued = 0, 0
		if !q.idle {
			close(q.drained)
		}
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}
