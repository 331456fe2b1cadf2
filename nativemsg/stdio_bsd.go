//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package nativemsg

import (
	"os"
	"syscall"
)

func dup2(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }

// pollableStream reports false: kqueue does not report a pipe's end to its
// reader on every one of these systems (Go issue 24164), so the standard
// streams stay blocking.
func pollableStream(int) bool { return false }

func preparePollable(int) bool { return false }

func enlargePipe(*os.File) {}
