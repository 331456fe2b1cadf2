//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package nativemsg

import (
	"os"
	"syscall"
)

// dupFD duplicates fd to a new descriptor that child processes do not
// inherit.
func dupFD(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(nfd)
	}
	return nfd, err
}

// guardStdout duplicates file descriptor 1 for frames and then makes 1 a
// copy of standard error.
func guardStdout() (*os.File, error) {
	fd, err := dupFD(1)
	if err != nil {
		return nil, err
	}
	if err := dup2(2, 1); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// Made non-blocking before os.NewFile, which then uses the poller.
	preparePollable(fd)
	return os.NewFile(uintptr(fd), "native-messaging-stdout"), nil
}

// openStdin returns the file frames are read from: a non-blocking
// duplicate of standard input where the poller can serve it, else
// os.Stdin.
func openStdin() (*os.File, error) {
	if !pollableStream(0) {
		return os.Stdin, nil
	}
	fd, err := dupFD(0)
	if err != nil {
		return nil, err
	}
	if !preparePollable(fd) {
		syscall.Close(fd)
		return os.Stdin, nil
	}
	return os.NewFile(uintptr(fd), "native-messaging-stdin"), nil
}
