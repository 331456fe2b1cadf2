package nativemsg

import (
	"syscall"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
)

// The relay plumbing is reached through internal/nmrelay, so that it is
// not part of this package's API.
func init() {
	nmrelay.Writer = func(w any) nmrelay.FrameWriter { return (*writerRelay)(w.(*Writer)) }
	nmrelay.Reader = func(r any) nmrelay.FrameReader { return (*readerRelay)(r.(*Reader)) }
}

type writerRelay Writer

func (w *writerRelay) WriteFrames(parts [][]byte) error { return (*Writer)(w).writeFrames(parts) }

func (w *writerRelay) SyscallConn() (syscall.RawConn, error) { return (*Writer)(w).syscallConn() }

type readerRelay Reader

func (r *readerRelay) NextSize() (int, error) { return (*Reader)(r).nextSize() }

func (r *readerRelay) Buffered() int { return (*Reader)(r).buffered() }
