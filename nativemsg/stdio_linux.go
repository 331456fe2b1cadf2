package nativemsg

import (
	"os"
	"syscall"
)

// dup2 uses dup3, which every Linux architecture has (arm64 lacks dup2).
func dup2(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }

// pipeSize is the buffer asked of a host's pipes.
const pipeSize = 1 << 20

const fSetPipeSize = 1031 // F_SETPIPE_SZ

// pollableStream reports whether fd is a pipe or a socket, which Go's
// poller can serve once non-blocking (unlike terminals, whose flags are
// shared with the shell, and files).
func pollableStream(fd int) bool {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return false
	}
	typ := st.Mode & syscall.S_IFMT
	return typ == syscall.S_IFIFO || typ == syscall.S_IFSOCK
}

// preparePollable makes fd non-blocking, and its buffer larger when it is
// a pipe (a refusal is harmless), when it is a pipe or a socket. It
// reports whether fd is non-blocking.
func preparePollable(fd int) bool {
	if !pollableStream(fd) {
		return false
	}
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fSetPipeSize, pipeSize) // only pipes take it
	return syscall.SetNonblock(fd, true) == nil
}

// enlargePipe asks for a 1 MiB buffer for the pipe f (a refusal is
// harmless). It reaches the descriptor through SyscallConn, not f.Fd(),
// which would switch the pipe to blocking mode: Close would then no longer
// interrupt a blocked read, and writers would lose the non-blocking
// direct-write path.
func enlargePipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, pipeSize)
	})
}
