//go:build unix

package wire

import "syscall"

// directWriter writes to a non-blocking connection without waiting. Its
// write method is bound once, so that a write allocates nothing; a Queue
// uses it for one write at a time.
type directWriter struct {
	rc    syscall.RawConn
	write func(fd uintptr) bool
	b     []byte
	n     int
	err   error
}

// newDirectWriter returns a directWriter for rc, or nil when rc is in
// blocking mode (a write could then wait for the peer).
func newDirectWriter(rc syscall.RawConn) *directWriter {
	nonblocking := false
	rc.Control(func(fd uintptr) {
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblocking = errno == 0 && flags&syscall.O_NONBLOCK != 0
	})
	if !nonblocking {
		return nil
	}
	d := &directWriter{rc: rc}
	d.write = d.writeFD
	return d
}

// tryWrite writes b as far as the connection takes it without waiting,
// and returns how much it wrote.
func (d *directWriter) tryWrite(b []byte) (int, error) {
	d.b, d.n, d.err = b, 0, nil
	err := d.rc.Write(d.write)
	n, werr := d.n, d.err
	d.b, d.err = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}

func (d *directWriter) writeFD(fd uintptr) bool {
	for d.n < len(d.b) {
		m, err := syscall.Write(int(fd), d.b[d.n:])
		if m > 0 {
			d.n += m
		}
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return true // full: Run waits for room
		case err != nil:
			d.err = err
			return true
		case m == 0:
			d.err = syscall.EIO // a write that makes no progress
			return true
		}
	}
	return true
}
