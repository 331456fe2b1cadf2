//go:build unix

package agentproto

import "syscall"

// temporaryAcceptErrnos are Accept errors that leave the listener usable.
var temporaryAcceptErrnos = []error{
	syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ECONNRESET,
	syscall.EINTR, syscall.EAGAIN, syscall.ENOBUFS, syscall.ENOMEM, syscall.EPROTO,
}
