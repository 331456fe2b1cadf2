//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package nativemsg

import "os"

// guardStdout keeps the original standard output for frames and points
// os.Stdout at standard error. Without dup2 the process's own handle 1 is
// left as it is, so output written below the os package still reaches it.
func guardStdout() (*os.File, error) {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out, nil
}

func openStdin() (*os.File, error) { return os.Stdin, nil }

func enlargePipe(*os.File) {}
