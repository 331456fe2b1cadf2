// Package nmrelay reaches the relay plumbing of package nativemsg that is
// not part of its public API: writing batches of ready-made frames, the
// writer's raw connection, and reading a frame's size before its body.
// Package nativemsg installs the hooks when it is initialised; agentproto's
// relay (agentproto/internal/wire) and its test extension use them.
package nmrelay

import (
	"errors"
	"syscall"
)

// ErrPartialFrame is returned by FrameWriter.WriteFrames for a batch that
// does not end at a frame boundary.
var ErrPartialFrame = errors.New("nativemsg: batch does not end with a whole frame")

// ErrNoSyscallConn is returned by FrameWriter.SyscallConn when the
// underlying writer has no file descriptor.
var ErrNoSyscallConn = errors.New("nativemsg: the writer has no raw connection")

// FrameWriter is the relay side of a *nativemsg.Writer.
type FrameWriter interface {
	// WriteFrames writes frames that are already encoded, header and body,
	// such as a batch queued by several senders: the concatenation of the
	// parts must be a sequence of whole frames. Each frame's header is
	// checked against the Writer's limit (and for zero length) before
	// anything is written; a batch with a bad or oversized frame, or with
	// trailing bytes that are not a whole frame (ErrPartialFrame), is
	// refused whole. The parts go out under the Writer's lock, in one
	// writev where the writer supports it, so frames from other calls
	// never interleave. The bodies are not parsed: the caller vouches that
	// they are JSON. The parts are not modified.
	WriteFrames(parts [][]byte) error
	// SyscallConn returns the raw connection of the underlying writer, when
	// it has one (files, pipes and sockets do), else ErrNoSyscallConn. A
	// caller that writes on it directly must not interleave with the
	// Writer's own writes.
	SyscallConn() (syscall.RawConn, error)
}

// FrameReader is the relay side of a *nativemsg.Reader.
type FrameReader interface {
	// NextSize reads the next frame's length header, unless it has
	// already, and returns the body length it announces, so that the
	// caller can size the buffer it passes to ReadMessage. Its errors are
	// those of ReadMessage's header (io.EOF, a sticky *FrameSizeError over
	// the limit); a zero-length frame gives 0 and no error.
	NextSize() (int, error)
	// Buffered reports how many bytes the Reader holds that it has read but
	// not yet returned, when it reads through a *bufio.Reader (a Conn with
	// ReadBufferSize); otherwise 0.
	Buffered() int
}

// The hooks, set by package nativemsg's init: w is a *nativemsg.Writer, r a
// *nativemsg.Reader. Any other type panics.
var (
	Writer func(w any) FrameWriter
	Reader func(r any) FrameReader
)
