//go:build unix

package main

import (
	"os"
	"syscall"
)

// guardStdout keeps standard output for MCP messages: it returns a file on a
// private copy of descriptor 1, then points descriptor 1 (and os.Stdout) at
// standard error, so that a stray print, a library logging to stdout or a
// child process inheriting it cannot corrupt the stream.
func guardStdout() *os.File {
	fd, err := syscall.Dup(1)
	if err != nil {
		os.Stdout = os.Stderr
		return os.NewFile(1, "/dev/stdout")
	}
	syscall.CloseOnExec(fd)
	out := os.NewFile(uintptr(fd), "mcp-stdout")
	if err := dupTo(2, 1); err == nil {
		os.Stdout = os.Stderr
	}
	return out
}
