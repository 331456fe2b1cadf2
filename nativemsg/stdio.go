package nativemsg

import (
	"fmt"
	"os"
	"sync"
)

var stdioOnce struct {
	sync.Mutex
	done bool
}

// OpenStdio returns the Conn a native messaging host talks to its browser
// through: frames are read from standard input and written to the
// process's original standard output.
//
// Stray bytes on standard output are the most common way native hosts
// break: Chrome reads them as a length header. So OpenStdio first moves the
// real standard output to a private file descriptor kept for frames, then
// points file descriptor 1 at standard error (on Unix systems; elsewhere
// only os.Stdout is repointed). After it returns, fmt.Println, a library
// logging to os.Stdout, or a C library's printf all end up on standard
// error, where Chrome leaves them alone.
//
// Call OpenStdio once, early in main, before starting goroutines that
// print. A second call returns an error. opts may be nil; the zero limits
// are a host's (read 64 MiB, write 1 MiB).
func OpenStdio(opts *ConnOptions) (*Conn, error) {
	stdioOnce.Lock()
	defer stdioOnce.Unlock()
	if stdioOnce.done {
		return nil, fmt.Errorf("nativemsg: OpenStdio called twice")
	}
	out, err := guardStdout()
	if err != nil {
		return nil, fmt.Errorf("nativemsg: guarding standard output: %w", err)
	}
	stdioOnce.done = true
	return NewConn(os.Stdin, out, closers{os.Stdin, out}, opts), nil
}

type closers []interface{ Close() error }

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
