package wire

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Buffer sizes pooled: powers of two from minPooled to maxPooled. A larger
// frame is read into memory that grows as its bytes arrive (nativemsg's
// gradual growth, so that a header claiming megabytes costs nothing until
// they arrive), unless bigPool has a buffer large enough (and not more
// than bigSlack times too large). Large buffers go to bigPool once
// released: a bridge relaying multi-megabyte results in turn then reads
// each into memory already allocated, instead of allocating, zeroing and
// growing it every time. Like every sync.Pool, bigPool holds its buffers
// only until the next garbage collections.
const (
	minPooledShift = 9  // 512 B
	maxPooledShift = 20 // 1 MiB
	bigClass       = -1 // Buffer.class of a buffer for bigPool
	bigSlack       = 4
)

var (
	pools   [maxPooledShift - minPooledShift + 1]sync.Pool
	bigPool sync.Pool
)

// Buffer is a frame buffer that may come from a pool. It is reference
// counted: it starts with one reference, Retain adds one and Release drops
// one; the last Release returns a pooled buffer to its pool. B must not be
// used by a holder after its Release. A nil *Buffer may be released.
type Buffer struct {
	B     []byte
	class int8         // pool index + 1; bigClass; 0 for memory of its own
	extra atomic.Int32 // references beyond the first
	free  atomic.Bool  // in its pool (kept only with SetDebug)
}

// debug makes the pool check buffer lifetimes (SetDebug).
var debug atomic.Bool

// SetDebug turns lifetime checks on or off, for tests: once on, a
// released pooled buffer is overwritten with garbage before it goes back
// to its pool (so that a holder still reading it sees the damage, and the
// race detector sees the write), and retaining or releasing a buffer that
// is in its pool panics.
func SetDebug(on bool) { debug.Store(on) }

// garbage is what SetDebug fills released buffers with: not JSON, and
// not a plausible frame header either.
const garbage = 0xEE

// GetBuffer returns a buffer with capacity for n bytes or, when n is
// beyond the pooled sizes and bigPool has none large enough, an empty one
// to read into memory of its own (which goes to bigPool once released).
func GetBuffer(n int) *Buffer {
	if n > 1<<maxPooledShift {
		if b, ok := bigPool.Get().(*Buffer); ok {
			if c := cap(b.B); c >= n && c/bigSlack <= n {
				b.taken()
				return b
			}
			bigPool.Put(b)
		}
		return &Buffer{class: bigClass}
	}
	shift := max(bits.Len(uint(max(n, 1)-1)), minPooledShift)
	class := shift - minPooledShift
	if b, ok := pools[class].Get().(*Buffer); ok {
		b.taken()
		return b
	}
	return &Buffer{B: make([]byte, 0, 1<<shift), class: int8(class + 1)}
}

// Pooled reports whether b's memory goes back to a pool once released
// (else it is b's own, for the garbage collector: a holder may keep it).
func (b *Buffer) Pooled() bool { return b.class != 0 }

// Retain adds a reference to b, for one more holder that will Release it.
func (b *Buffer) Retain() {
	if debug.Load() && b.free.Load() {
		panic("wire: Retain of a released buffer")
	}
	b.extra.Add(1)
}

// taken marks a buffer just taken from its pool.
func (b *Buffer) taken() {
	if debug.Load() {
		b.free.Store(false)
	}
}

// Release drops a reference to b; the last returns it to its pool.
func (b *Buffer) Release() {
	if b == nil {
		return
	}
	if debug.Load() && b.free.Load() {
		panic("wire: Release of a released buffer")
	}
	if b.extra.Add(-1) >= 0 {
		return
	}
	// That was the last reference: extra is -1, and nothing else holds b.
	b.extra.Store(0)
	if debug.Load() && b.class != 0 {
		fill(b.B[:cap(b.B)], garbage)
		b.free.Store(true)
	}
	switch {
	case b.class == bigClass && cap(b.B) > 1<<maxPooledShift:
		b.B = b.B[:0]
		bigPool.Put(b)
	case b.class > 0:
		b.B = b.B[:0]
		pools[b.class-1].Put(b)
	}
}

// ReadFrame reads the next frame from r into a buffer from the pool, sized
// from the frame's header. The caller releases the buffer when done with
// the frame.
func ReadFrame(r *nativemsg.Reader) ([]byte, *Buffer, error) {
	n, err := nmrelay.Reader(r).NextSize()
	if err != nil {
		return nil, nil, err
	}
	buf := GetBuffer(n)
	frame, err := r.ReadMessage(buf.B[:0])
	if err != nil {
		buf.Release()
		return nil, nil, err
	}
	// frame is in buf.B, or, for a frame over the pooled sizes that no
	// pooled buffer could hold, in new memory that buf takes over.
	buf.B = frame
	return frame, buf, nil
}

// fill sets every byte of b to c, with copies (cheap under the race
// detector, which checks a copy once and a loop byte by byte).
func fill(b []byte, c byte) {
	if len(b) == 0 {
		return
	}
	b[0] = c
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
