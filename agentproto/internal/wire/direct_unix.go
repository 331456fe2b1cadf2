//go:build unix

package wire

import "syscall"

// directWriter writes to a non-blocking connection without waiting. Its
// write method is bound once, so that a write allocates nothing; a Queue
// uses it for one write at a time.
type directWriter struct {
	rc        syscall.RawConn
	sysWrite  func(fd int, b []byte) (int, error) // syscall.Write; a stand-in in tests
	write     func(fd uintptr) bool               // as far as the peer takes without waiting
	waitWrite func(fd uintptr) bool               // everything, waiting for room
	b         []byte
	n         int
	err       error
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
	return bindDirectWriter(rc, syscall.Write)
}

// bindDirectWriter returns a directWriter writing to rc's descriptor with
// sysWrite.
func bindDirectWriter(rc syscall.RawConn, sysWrite func(fd int, b []byte) (int, error)) *directWriter {
	d := &directWriter{rc: rc, sysWrite: sysWrite}
	d.write = func(fd uintptr) bool { d.writeFD(fd); return true }
	d.waitWrite = d.writeFD
	return d
}

// tryWrite writes b as far as the connection takes it without waiting,
// and returns how much it wrote.
func (d *directWriter) tryWrite(b []byte) (int, error) {
	return d.run(b, d.write)
}

// writeAll writes all of b; the connection's poller parks the goroutine
// while the peer's buffer is full.
func (d *directWriter) writeAll(b []byte) error {
	_, err := d.run(b, d.waitWrite)
	return err
}

func (d *directWriter) run(b []byte, f func(fd uintptr) bool) (int, error) {
	d.b, d.n, d.err = b, 0, nil
	err := d.rc.Write(f)
	n, werr := d.n, d.err
	d.b, d.err = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}

// writeFD writes d.b from d.n on; it returns false when the peer's buffer
// is full (RawConn.Write then waits for room and calls it again).
func (d *directWriter) writeFD(fd uintptr) bool {
	for d.n < len(d.b) {
		m, err := d.sysWrite(int(fd), d.b[d.n:])
		if m > 0 {
			d.n += m
		}
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			return false
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
