package wire

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// Buffer sizes pooled: powers of two from minPooled to maxPooled. Larger
// frames get memory of their own (and nativemsg's gradual growth, so that
// a header claiming megabytes costs nothing until they arrive).
const (
	minPooledShift = 9  // 512 B
	maxPooledShift = 20 // 1 MiB
)

var pools [maxPooledShift - minPooledShift + 1]sync.Pool

// Buffer is a frame buffer that may come from a pool. It is reference
// counted: it starts with one reference, Retain adds one and Release drops
// one; the last Release returns a pooled buffer to its pool. B must not be
// used by a holder after its Release. A nil *Buffer may be released.
type Buffer struct {
	B     []byte
	class int8         // pool index + 1; 0 for a buffer of its own
	extra atomic.Int32 // references beyond the first
}

// GetBuffer returns a buffer with capacity for n bytes, or an unpooled
// empty one when n is beyond the pooled sizes.
func GetBuffer(n int) *Buffer {
	if n > 1<<maxPooledShift {
		return &Buffer{}
	}
	shift := max(bits.Len(uint(max(n, 1)-1)), minPooledShift)
	class := shift - minPooledShift
	if b, ok := pools[class].Get().(*Buffer); ok {
		return b
	}
	return &Buffer{B: make([]byte, 0, 1<<shift), class: int8(class + 1)}
}

// Pooled reports whether b's memory goes back to a pool once released
// (else it is b's own, for the garbage collector: a holder may keep it).
func (b *Buffer) Pooled() bool { return b.class != 0 }

// Retain adds a reference to b, for one more holder that will Release it.
func (b *Buffer) Retain() { b.extra.Add(1) }

// Release drops a reference to b; the last returns it to its pool.
func (b *Buffer) Release() {
	if b == nil || b.extra.Add(-1) >= 0 {
		return
	}
	// That was the last reference: extra is -1, and nothing else holds b.
	b.extra.Store(0)
	if b.class == 0 {
		return
	}
	b.B = b.B[:0]
	pools[b.class-1].Put(b)
}

// ReadFrame reads the next frame from r into a buffer from the pool, sized
// from the frame's header. The caller releases the buffer when done with
// the frame.
func ReadFrame(r *nativemsg.Reader) ([]byte, *Buffer, error) {
	n, err := r.NextSize()
	if err != nil {
		return nil, nil, err
	}
	buf := GetBuffer(n)
	frame, err := r.ReadMessage(buf.B[:0])
	if err != nil {
		buf.Release()
		return nil, nil, err
	}
	if cap(frame) != cap(buf.B) {
		// Read into memory of its own (a frame over the pooled sizes).
		buf.Release()
		buf = &Buffer{}
	}
	buf.B = frame
	return frame, buf, nil
}
