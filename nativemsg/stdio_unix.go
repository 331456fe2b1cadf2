//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package nativemsg

import (
	"os"
	"syscall"
)

// guardStdout duplicates file descriptor 1 for frames and then makes 1 a
// copy of standard error.
func guardStdout() (*os.File, error) {
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(1)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := dup2(2, 1); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "native-messaging-stdout"), nil
}
