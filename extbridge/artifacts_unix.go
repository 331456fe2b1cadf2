//go:build unix

package extbridge

import "syscall"

// openNonblock makes opening an artifact never wait for a FIFO's writer.
const openNonblock = syscall.O_NONBLOCK
