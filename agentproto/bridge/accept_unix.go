//go:build unix

package bridge

import "syscall"

// temporaryAcceptErrnos are Accept errors that leave the listener usable.
var temporaryAcceptErrnos = []error{
	syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ECONNRESET,
	syscall.EINTR, syscall.EAGAIN, syscall.ENOBUFS, syscall.ENOMEM, syscall.EPROTO,
}
