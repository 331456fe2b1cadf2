package nativemsg

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
)

const (
	// DefaultReadLimit is the largest frame a Reader accepts by default:
	// 64 MiB, the most Chrome sends from an extension to a host.
	DefaultReadLimit = 64 << 20

	// DefaultWriteLimit is the largest frame a Writer sends by default:
	// 1 MiB (1,048,576 bytes), the most Chrome accepts from a host. Chrome
	// closes the port on a frame of 1,048,577 bytes.
	DefaultWriteLimit = 1 << 20

	// headerSize is the length prefix: a uint32 in little-endian order.
	headerSize = 4
)

// ErrEmptyFrame is returned for a frame whose length is zero. Chrome never
// sends one; JSON has no empty value.
var ErrEmptyFrame = errors.New("nativemsg: empty frame")

// ErrInvalidJSON is matched by errors for a frame body that is not JSON.
var ErrInvalidJSON = errors.New("nativemsg: frame body is not valid JSON")

// FrameSizeError reports a frame longer than the limit in force: on read,
// the length its header claims (nothing of it has been allocated or read);
// on write, the body's length (nothing has been written).
type FrameSizeError struct {
	Size  uint64 // the frame body's length in bytes
	Limit int    // the limit it exceeded
}

func (e *FrameSizeError) Error() string {
	return "nativemsg: frame of " + strconv.FormatUint(e.Size, 10) +
		" bytes exceeds the limit of " + strconv.Itoa(e.Limit) + " bytes"
}

// ReaderOptions configures a Reader. The zero value is the default.
type ReaderOptions struct {
	// MaxFrameSize is the largest frame body accepted, in bytes.
	// Zero means DefaultReadLimit. Values above the uint32 range mean
	// no limit but the header's.
	MaxFrameSize int
}

// Reader reads native messaging frames: a uint32 little-endian length
// followed by that many bytes of UTF-8 JSON.
//
// A Reader is not safe for concurrent use: one goroutine reads a stream.
type Reader struct {
	r     io.Reader
	limit int
	hdr   [headerSize]byte
	size  uint32 // the body length announced by a header NextSize read
	ahead bool   // NextSize has read the next frame's header
	buf   []byte // Decode's reused body buffer
	err   error  // sticky: the stream is out of step after a header error
}

// NewReader returns a Reader of frames from r. opts may be nil.
func NewReader(r io.Reader, opts *ReaderOptions) *Reader {
	limit := DefaultReadLimit
	if opts != nil && opts.MaxFrameSize > 0 {
		limit = opts.MaxFrameSize
	}
	return &Reader{r: r, limit: limit}
}

// Limit reports the largest frame body the Reader accepts.
func (r *Reader) Limit() int { return r.limit }

// buffered reports how many bytes the Reader holds that it has read from
// the underlying reader but not yet returned, when that reader is a
// *bufio.Reader (as under a Conn with ReadBufferSize); otherwise 0. More
// than 4 means more of the stream has already arrived: a peer answering
// frames can hold its answers back and write them together. The relay
// reaches it through internal/nmrelay.
func (r *Reader) buffered() int {
	if br, ok := r.r.(*bufio.Reader); ok {
		return br.Buffered()
	}
	return 0
}

// nextSize reads the next frame's length header, unless it has already,
// and returns the body length it announces, so that the caller can size
// the buffer it passes to ReadMessage, which then reads that body. Its
// errors are those of ReadMessage's header: io.EOF at a clean end of
// stream and a *FrameSizeError (sticky) for a header over the limit. A
// zero-length frame gives 0 and no error; ReadMessage then returns
// ErrEmptyFrame. The relay reaches it through internal/nmrelay.
func (r *Reader) nextSize() (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if !r.ahead {
		if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
			// io.ReadFull gives io.EOF only when no byte was read.
			return 0, err
		}
		n := binary.LittleEndian.Uint32(r.hdr[:])
		if uint64(n) > uint64(r.limit) {
			r.err = &FrameSizeError{Size: uint64(n), Limit: r.limit}
			return 0, r.err
		}
		r.size, r.ahead = n, true
	}
	return int(r.size), nil
}

// ReadMessage reads the next frame and returns its body, stored in buf when
// it fits in buf's capacity (pass buf[:0] of a previous result to reuse it,
// or nil to get a new slice).
//
// At a clean end of stream between frames it returns io.EOF; a stream that
// ends inside a frame gives io.ErrUnexpectedEOF. A header claiming more than
// the limit gives a *FrameSizeError before anything is allocated; the stream
// cannot be resynchronised after it, so every later call returns the same
// error. A zero-length frame gives ErrEmptyFrame and a body that cannot
// start a JSON value gives an error matching ErrInvalidJSON; both leave the
// Reader at the next frame. ReadMessage checks only the body's first
// non-space byte: Decode, or a caller's own parser, checks the rest.
//
// Bodies up to 1 MiB are read into memory allocated whole; larger ones into
// memory that grows fourfold as their bytes arrive, so that a header
// claiming up to the limit costs memory only as its sender really sends.
func (r *Reader) ReadMessage(buf []byte) ([]byte, error) {
	if _, err := r.nextSize(); err != nil {
		return nil, err
	}
	n := r.size
	r.ahead = false
	if n == 0 {
		return nil, ErrEmptyFrame
	}
	var err error
	switch {
	case uint64(cap(buf)) >= uint64(n):
		buf = buf[:n]
		_, err = io.ReadFull(r.r, buf)
	case n <= eagerAlloc:
		buf = make([]byte, n)
		_, err = io.ReadFull(r.r, buf)
	default:
		buf, err = readGrowing(r.r, buf[:0], int(n))
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.err = err
		return nil, err
	}
	if !startsJSONValue(buf) {
		return nil, fmt.Errorf("%w: no JSON value at the start of a %d-byte frame", ErrInvalidJSON, n)
	}
	return buf, nil
}

// eagerAlloc is the largest body allocated whole before it arrives. Larger
// bodies grow with the bytes actually received, so that a header claiming
// up to the limit costs memory only as its sender really sends.
const eagerAlloc = 1 << 20

// growthFactor bounds the memory a growing body holds to this many times
// the bytes received (plus eagerAlloc). Growing fourfold rather than
// twofold copies a third of a large body instead of all of it, and
// allocates 1.3 times its size instead of twice.
const growthFactor = 4

// readGrowing reads n bytes into buf, growing its capacity as data arrives.
func readGrowing(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(max(growthFactor*len(buf), eagerAlloc), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func startsJSONValue(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', '-', 't', 'f', 'n', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return true
		default:
			return false
		}
	}
	return false
}

// maxRetainedBuffer bounds the body buffer Decode keeps between calls, so
// that one huge frame does not pin its memory for the Reader's lifetime.
const maxRetainedBuffer = 1 << 20

// Decode reads the next frame and unmarshals its body into v with
// encoding/json. Errors are those of ReadMessage, or an error matching
// ErrInvalidJSON (and wrapping encoding/json's) for a malformed body.
func (r *Reader) Decode(v any) error {
	body, err := r.ReadMessage(r.buf[:0])
	if err != nil {
		return err
	}
	if cap(body) <= maxRetainedBuffer {
		r.buf = body
	}
	if err := json.Unmarshal(body, v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return fmt.Errorf("%w: %w", ErrInvalidJSON, err)
		}
		return fmt.Errorf("nativemsg: decoding frame: %w", err)
	}
	return nil
}

// WriterOptions configures a Writer. The zero value is the default.
type WriterOptions struct {
	// MaxFrameSize is the largest frame body written, in bytes.
	// Zero means DefaultWriteLimit. It cannot exceed the uint32 range.
	MaxFrameSize int
}

// Writer writes native messaging frames. Each frame, header and body, goes
// to the underlying writer in a single Write call.
//
// A Writer is safe for concurrent use: frames from several goroutines never
// interleave.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	limit int
	buf   bytes.Buffer // header + body of the frame being written
	enc   *json.Encoder
	vec   [][]byte     // WriteFrames' scratch list of parts
	bufs  net.Buffers  // WriteFrames' view of vec, which writing consumes
	file  *fileVectors // writev for an *os.File; nil for other writers
}

// NewWriter returns a Writer of frames to w. opts may be nil.
func NewWriter(w io.Writer, opts *WriterOptions) *Writer {
	limit := DefaultWriteLimit
	if opts != nil && opts.MaxFrameSize > 0 {
		limit = min(opts.MaxFrameSize, 1<<32-1)
	}
	wr := &Writer{w: w, limit: limit, file: newFileVectors(w)}
	wr.enc = json.NewEncoder(&wr.buf)
	wr.enc.SetEscapeHTML(false)
	return wr
}

// Limit reports the largest frame body the Writer sends.
func (w *Writer) Limit() int { return w.limit }

// syscallConn returns the raw connection of the underlying writer, when it
// has one (files, pipes and sockets do), so that the relay can try a write
// that must not block. A caller that writes on it directly must not
// interleave with the Writer's own writes.
func (w *Writer) syscallConn() (syscall.RawConn, error) {
	if sc, ok := w.w.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, nmrelay.ErrNoSyscallConn
}

// WriteMessage writes msg, which must be one JSON value, as one frame. A
// message over the limit is refused with a *FrameSizeError and nothing is
// written; an empty one with ErrEmptyFrame. WriteMessage does not parse
// msg: the caller vouches that it is JSON (Encode produces it).
func (w *Writer) WriteMessage(msg []byte) error {
	if len(msg) == 0 {
		return ErrEmptyFrame
	}
	if len(msg) > w.limit {
		return &FrameSizeError{Size: uint64(len(msg)), Limit: w.limit}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	w.buf.Grow(headerSize + len(msg))
	var hdr [headerSize]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(msg)))
	w.buf.Write(hdr[:])
	w.buf.Write(msg)
	return w.flush()
}

// Encode marshals v with encoding/json (HTML characters not escaped, as
// JavaScript's JSON.stringify leaves them) and writes it as one frame,
// subject to the same limit as WriteMessage.
func (w *Writer) Encode(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	var placeholder [headerSize]byte
	w.buf.Write(placeholder[:])
	if err := w.enc.Encode(v); err != nil {
		w.buf.Reset()
		return fmt.Errorf("nativemsg: encoding frame: %w", err)
	}
	frame := w.buf.Bytes()
	frame = frame[:len(frame)-1] // json.Encoder ends each value with '\n'
	n := len(frame) - headerSize
	if n > w.limit {
		w.buf.Reset()
		return &FrameSizeError{Size: uint64(n), Limit: w.limit}
	}
	binary.LittleEndian.PutUint32(frame, uint32(n))
	w.buf.Truncate(len(frame))
	return w.flush()
}

// flush writes the frame in w.buf with one Write and releases an unusually
// large buffer. w.mu is held.
func (w *Writer) flush() error {
	_, err := w.w.Write(w.buf.Bytes())
	if w.buf.Cap() > maxRetainedBuffer+headerSize {
		w.buf = bytes.Buffer{}
	}
	return err
}

// writeFrames writes frames that are already encoded, header and body,
// such as a batch queued by several senders: the concatenation of the
// parts must be a sequence of whole frames. Each frame's header is checked
// against the limit (and for zero length) before anything is written; a
// batch with a bad or oversized frame, or with trailing bytes that are not
// a whole frame, is refused whole. The parts go to the underlying writer
// under the Writer's lock, in one writev where the writer supports it
// (network connections, as net.Buffers does, and files such as pipes), so
// frames from other calls never interleave.
// WriteFrames does not parse the bodies: the caller vouches that they are
// JSON. It does not modify the parts. The relay reaches it through
// internal/nmrelay.
func (w *Writer) writeFrames(parts [][]byte) error {
	if err := w.checkFrames(parts); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(parts) == 1 {
		_, err := w.w.Write(parts[0])
		return err
	}
	if w.file != nil {
		return w.file.writeParts(parts)
	}
	w.vec = append(w.vec[:0], parts...)
	w.bufs = w.vec
	_, err := w.bufs.WriteTo(w.w) // consumes w.bufs, not w.vec's elements
	clear(w.vec)
	return err
}

// checkFrames walks the frame headers of a batch spread over parts.
func (w *Writer) checkFrames(parts [][]byte) error {
	var hdr [headerSize]byte
	have := 0       // header bytes collected
	var skip uint64 // body bytes of the current frame still to pass
	for _, p := range parts {
		for len(p) > 0 {
			if skip > 0 {
				n := min(uint64(len(p)), skip)
				p = p[n:]
				skip -= n
				continue
			}
			n := copy(hdr[have:], p)
			have += n
			p = p[n:]
			if have < headerSize {
				continue
			}
			have = 0
			size := binary.LittleEndian.Uint32(hdr[:])
			if size == 0 {
				return ErrEmptyFrame
			}
			if uint64(size) > uint64(w.limit) {
				return &FrameSizeError{Size: uint64(size), Limit: w.limit}
			}
			skip = uint64(size)
		}
	}
	if have != 0 || skip != 0 {
		return nmrelay.ErrPartialFrame
	}
	return nil
}
