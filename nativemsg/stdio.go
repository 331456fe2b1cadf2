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
// points file descriptor 1 at standard error (on Unix systems; on Windows
// os.Stdout and the standard output handle are repointed). After it returns, fmt.Println, a library
// logging to os.Stdout, or a C library's printf all end up on standard
// error, where Chrome leaves them alone.
//
// On Linux, when standard input and output are pipes or sockets (as a
// browser starts a host), OpenStdio reads and writes them in non-blocking
// mode through Go's poller, on descriptors of their own, so that
// Conn.Close interrupts a read blocked on standard input or a write
// blocked on standard output: a host can then stop promptly on SIGTERM
// while the browser is silent. It also asks for 1 MiB pipe buffers (the
// most Chrome accepts in one frame; unprivileged processes may go up to
// /proc/sys/fs/pipe-max-size, 1 MiB by default), so that a large frame
// crosses with fewer wake-ups. Standard input then belongs to the Conn:
// os.Stdin must not be read. Terminals and files are left as they are
// (their flags are shared with the shell), and so are the streams on
// other systems, where a blocked read ends only when the browser closes
// the pipe.
//
// Call OpenStdio once, early in main, before starting goroutines that
// print. A second call returns an error. opts may be nil; the zero limits
// are a host's (read 64 MiB, write 1 MiB). Conn.Close closes the frames'
// descriptors and standard input.
func OpenStdio(opts *ConnOptions) (*Conn, error) {
	stdioOnce.Lock()
	defer stdioOnce.Unlock()
	if stdioOnce.done {
		return nil, fmt.Errorf("nativemsg: OpenStdio called twice")
	}
	in, err := openStdin()
	if err != nil {
		return nil, fmt.Errorf("nativemsg: opening standard input: %w", err)
	}
	out, err := guardStdout()
	if err != nil {
		if in != os.Stdin {
			in.Close()
		}
		return nil, fmt.Errorf("nativemsg: guarding standard output: %w", err)
	}
	stdioOnce.done = true
	cs := closers{in, out}
	if in != os.Stdin {
		cs = append(cs, os.Stdin)
	}
	return NewConn(in, out, cs, opts), nil
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
