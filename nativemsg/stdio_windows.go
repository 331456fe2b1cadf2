//go:build windows

package nativemsg

import (
	"os"

	"golang.org/x/sys/windows"
)

// guardStdout keeps the original standard output for frames and points
// both os.Stdout and the process's standard output handle (what
// GetStdHandle(STD_OUTPUT_HANDLE) returns to code below the os package) at
// standard error. Windows has no dup2: a C runtime that cached handle 1
// before this call still writes to the original.
func guardStdout() (*os.File, error) {
	out := os.Stdout
	if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, windows.Handle(os.Stderr.Fd())); err != nil {
		return nil, err
	}
	os.Stdout = os.Stderr
	return out, nil
}

// openStdin returns os.Stdin: Windows anonymous pipes are synchronous
// handles that Go's poller cannot serve.
func openStdin() (*os.File, error) { return os.Stdin, nil }

func enlargePipe(*os.File) {}
