package nativemsg

import (
	"bufio"
	"io"
	"net"
	"os"
	"sync"
)

// ConnOptions configures a Conn. The zero value is the default.
type ConnOptions struct {
	// ReadLimit is the largest frame read, in bytes. Zero means
	// DefaultReadLimit (what a host accepts from the browser).
	ReadLimit int
	// WriteLimit is the largest frame written, in bytes. Zero means
	// DefaultWriteLimit (what the browser accepts from a host).
	WriteLimit int
	// ReadBufferSize, when positive, puts a bufio.Reader of that many
	// bytes under the Reader, so that the length header and body of a
	// frame, and several frames that arrive together, cost one system
	// call instead of two per frame. Frames larger than the buffer are
	// still read straight into their own memory. Zero means unbuffered.
	ReadBufferSize int
}

// Conn is one native messaging connection: a Reader of incoming frames and
// a Writer of outgoing ones, with Close for the underlying streams. Its
// reading methods are for one goroutine at a time; its writing methods are
// safe for concurrent use, and so is Close.
//
// As with bufio.ReadWriter, the embedded types' Limit methods are not
// promoted: use c.Reader.Limit() and c.Writer.Limit().
type Conn struct {
	*Reader
	*Writer

	closer    io.Closer
	closeOnce sync.Once
	closeErr  error
}

// NewConn returns a Conn reading frames from r and writing them to w.
// Close closes c (when not nil). opts may be nil.
func NewConn(r io.Reader, w io.Writer, c io.Closer, opts *ConnOptions) *Conn {
	var o ConnOptions
	if opts != nil {
		o = *opts
	}
	if o.ReadBufferSize > 0 {
		r = bufio.NewReaderSize(r, o.ReadBufferSize)
	}
	return &Conn{
		Reader: NewReader(r, &ReaderOptions{MaxFrameSize: o.ReadLimit}),
		Writer: NewWriter(w, &WriterOptions{MaxFrameSize: o.WriteLimit}),
		closer: c,
	}
}

// Close closes the underlying streams. It is idempotent: later calls
// return the first call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if c.closer != nil {
			c.closeErr = c.closer.Close()
		}
	})
	return c.closeErr
}

// Pipe returns the two ends of an in-memory native messaging connection,
// for tests of hosts and of extension stand-ins. Each end's limits are those
// of its side of a real connection: host reads up to 64 MiB and writes up
// to 1 MiB; browser reads up to 1 MiB and writes up to 64 MiB. Like
// net.Pipe, a write blocks until the other end reads it. Closing either end
// makes reads at the other end return io.EOF.
func Pipe() (host, browser *Conn) {
	h, b := net.Pipe()
	host = NewConn(h, h, h, nil)
	browser = NewConn(b, b, b, &ConnOptions{ReadLimit: DefaultWriteLimit, WriteLimit: DefaultReadLimit})
	return host, browser
}

// osPipeReadBuffer is the read buffer of each end of OSPipe.
const osPipeReadBuffer = 64 << 10

// OSPipe is Pipe over two operating-system pipes, as a browser joins
// itself to a host: writes return once the pipe holds them (1 MiB pipes on
// Linux, as OpenStdio asks for), reads go through Go's poller, and each end
// reads through a 64 KiB buffer. The pipes stay non-blocking, as
// OpenStdio's streams on Linux, so Close interrupts a read blocked on them
// and writers can try a write that must not wait. Closing an end closes
// both its pipes; the other end then reads io.EOF. It serves tests and
// benchmarks that want the costs of a real link.
//
// On Windows the pipes are anonymous pipes: synchronous, outside the
// poller, holding 4 KiB, so a write waits for the reader beyond that and
// Close does not interrupt a blocked read.
func OSPipe() (host, browser *Conn, err error) {
	hostR, browserW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	browserR, hostW, err := os.Pipe()
	if err != nil {
		hostR.Close()
		browserW.Close()
		return nil, nil, err
	}
	for _, f := range []*os.File{hostR, hostW} {
		enlargePipe(f)
	}
	host = NewConn(hostR, hostW, closers{hostR, hostW}, &ConnOptions{ReadBufferSize: osPipeReadBuffer})
	browser = NewConn(browserR, browserW, closers{browserR, browserW}, &ConnOptions{
		ReadLimit: DefaultWriteLimit, WriteLimit: DefaultReadLimit, ReadBufferSize: osPipeReadBuffer})
	return host, browser, nil
}
