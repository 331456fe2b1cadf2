package hostcmd

import "syscall"

// pipeSize is the capacity asked of the link's pipes: Chrome sends up to
// 64 MiB and accepts up to 1 MiB per frame. Unprivileged processes may
// go up to /proc/sys/fs/pipe-max-size (1 MiB by default); a refusal is
// harmless.
const pipeSize = 1 << 20

const fSetPipeSize = 1031 // F_SETPIPE_SZ

// preparePipe makes fd non-blocking and larger when it is a pipe, and
// reports whether it did. Terminals and files are left alone: their
// flags are shared with the shell.
func preparePipe(fd int) bool {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return false
	}
	syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), fSetPipeSize, pipeSize)
	return syscall.SetNonblock(fd, true) == nil
}
