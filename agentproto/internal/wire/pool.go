package wire

import (
	"bufio"
	"encoding/binary"
	"math/bits"
	"sync"

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

// Buffer is a frame buffer that may come from a pool. Release returns it;
// a Buffer must not be used after its Release, and Release may be called
// at most once (it is a no-op for unpooled buffers).
type Buffer struct {
	B     []byte
	class int8 // pool index + 1; 0 for a buffer of its own
}

// Releaser is something to release once a queued frame has been written.
type Releaser interface{ Release() }

// GetBuffer returns a buffer with capacity for n bytes, or an unpooled
// empty one when n is beyond the pooled sizes.
func GetBuffer(n int) *Buffer {
	if n > 1<<maxPooledShift {
		return &Buffer{}
	}
	shift := max(bits.Len(uint(n-1)), minPooledShift)
	class := shift - minPooledShift
	if b, ok := pools[class].Get().(*Buffer); ok {
		return b
	}
	return &Buffer{B: make([]byte, 0, 1<<shift), class: int8(class + 1)}
}

// Release returns b to its pool.
func (b *Buffer) Release() {
	if b == nil || b.class == 0 {
		return
	}
	b.B = b.B[:0]
	pools[b.class-1].Put(b)
}

// ReadFrame reads the next frame from r, which reads from br, into a
// buffer from the pool (sized from the frame's header, peeked first). The
// caller releases the buffer when done with the frame.
func ReadFrame(br *bufio.Reader, r *nativemsg.Reader) ([]byte, *Buffer, error) {
	var buf *Buffer
	if hdr, err := br.Peek(4); err == nil {
		n := binary.LittleEndian.Uint32(hdr)
		if uint64(n) <= uint64(r.Limit()) && n > 0 {
			buf = GetBuffer(int(n))
		}
	}
	var dst []byte
	if buf != nil {
		dst = buf.B[:0]
	}
	frame, err := r.ReadMessage(dst)
	if err != nil {
		buf.Release()
		return nil, nil, err
	}
	if buf == nil || cap(frame) != cap(buf.B) {
		buf.Release()
		buf = &Buffer{B: frame}
	} else {
		buf.B = frame
	}
	return frame, buf, nil
}
