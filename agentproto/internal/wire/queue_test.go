package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a FrameWriter that keeps what it is given. A write can be
// held (gate) until the test lets it go, and can fail (err).
type recorder struct {
	limit   int
	gate    chan struct{} // when not nil, each write waits for a token
	entered chan struct{} // when not nil, told of each write as it starts
	err     error

	mu      sync.Mutex
	out     bytes.Buffer
	batches [][][]byte // the parts of each write, as given
}

func (r *recorder) Limit() int { return r.limit }

func (r *recorder) WriteFrames(parts [][]byte) error {
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, append([][]byte(nil), parts...))
	if r.err != nil {
		return r.err
	}
	for _, p := range parts {
		r.out.Write(p)
	}
	return nil
}

// held returns a recorder whose writes wait for the test.
func held(limit int) *recorder {
	return &recorder{limit: limit, gate: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (r *recorder) frames(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	return readFrames(t, bytes.NewReader(r.out.Bytes()))
}

func (r *recorder) writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func readFrames(t *testing.T, src io.Reader) []string {
	t.Helper()
	rd := nativemsg.NewReader(src, &nativemsg.ReaderOptions{MaxFrameSize: 1 << 30})
	var got []string
	for {
		body, err := rd.ReadMessage(nil)
		if err == io.EOF {
			return got
		}
		require.NoError(t, err)
		got = append(got, string(body))
	}
}

// runQueue starts q.Run and returns a function that closes q and returns
// Run's error.
func runQueue(q *Queue) func() error {
	done := make(chan error, 1)
	go func() { done <- q.Run() }()
	return func() error {
		q.Close()
		return <-done
	}
}

// heldBuffer is a pooled buffer with one extra reference, given to the
// queue: refs reports the references left.
func heldBuffer(size int) *Buffer {
	b := GetBuffer(size)
	b.B = append(b.B[:0], strings.Repeat("z", size)...)
	b.Retain()
	return b
}

func refs(b *Buffer) int { return int(b.extra.Load()) + 1 }

func TestQueueWritesFramesInOrder(t *testing.T) {
	w := &recorder{limit: 1 << 20}
	q := NewQueue(w, QueueOptions{})
	stop := runQueue(q)
	large := `"` + strings.Repeat("L", CopyLimit+10) + `"`
	want := []string{`{"a":1}`, large, `[2]`, `"x"`}
	require.NoError(t, q.Push([]byte(`{"a":`), []byte(`1`), []byte(`}`), nil, nil))
	require.NoError(t, q.Push(nil, []byte(large), nil, nil, nil))
	require.NoError(t, q.Push([]byte(`[2]`), nil, nil, nil, nil))
	require.NoError(t, q.Send(nil, []byte(`"x"`), nil, nil, nil)) // no Direct: as Push
	<-q.Drained()
	assert.Equal(t, want, w.frames(t))
	assert.Zero(t, q.Queued())
	assert.NoError(t, stop(), "Run returns nil after Close")
}

func TestQueueBatchesWhatWaits(t *testing.T) {
	w := held(1 << 20)
	q := NewQueue(w, QueueOptions{})
	stop := runQueue(q)
	defer stop()
	require.NoError(t, q.Push([]byte(`"first"`), nil, nil, nil, nil))
	<-w.entered // Run holds the first frame; the next three wait together.
	for i := range 3 {
		require.NoError(t, q.Push([]byte(fmt.Sprintf(`%d`, i)), nil, nil, nil, nil))
	}
	assert.Equal(t, 3*5, q.Queued(), "three frames of 4+1 bytes wait")
	w.gate <- struct{}{}
	w.gate <- struct{}{}
	<-q.Drained()
	assert.Equal(t, []string{`"first"`, `0`, `1`, `2`}, w.frames(t))
	assert.Equal(t, 2, w.writes(), "the frames that waited went in one write")
}

func TestQueueBorrowsLargeBodies(t *testing.T) {
	for _, copyAll := range []bool{false, true} {
		t.Run(fmt.Sprintf("CopyAll=%v", copyAll), func(t *testing.T) {
			w := held(1 << 20)
			q := NewQueue(w, QueueOptions{CopyAll: copyAll})
			stop := runQueue(q)
			defer stop()
			body := heldBuffer(CopyLimit + 1)
			body.B[0], body.B[len(body.B)-1] = '"', '"'
			small := heldBuffer(10)
			small.B[0], small.B[9] = '"', '"'
			require.NoError(t, q.Push(nil, small.B, nil, small, nil))
			assert.Equal(t, 1, refs(small), "a copied body is released at once")
			require.NoError(t, q.Push([]byte(`[`), body.B, []byte(`]`), body, nil))
			if copyAll {
				assert.Equal(t, 1, refs(body), "copied, so released at once")
			} else {
				assert.Equal(t, 2, refs(body), "borrowed until written")
			}
			close(w.gate)
			<-q.Drained()
			assert.Equal(t, 1, refs(body))
			assert.Equal(t, []string{string(small.B), "[" + string(body.B) + "]"}, w.frames(t))
			borrowed := false
			for _, b := range w.batches {
				for _, p := range b {
					borrowed = borrowed || (len(p) > 0 && &p[0] == &body.B[0])
				}
			}
			assert.Equal(t, !copyAll, borrowed, "the body written from the caller's memory")
		})
	}
}

func TestQueueRefusals(t *testing.T) {
	w := held(100)
	q := NewQueue(w, QueueOptions{MaxQueued: 30})
	stop := runQueue(q)

	b := heldBuffer(10)
	var fse *nativemsg.FrameSizeError
	err := q.Push(bytes.Repeat([]byte("1"), 101), nil, nil, b, nil)
	require.ErrorAs(t, err, &fse)
	assert.Equal(t, nativemsg.FrameSizeError{Size: 101, Limit: 100}, *fse)
	assert.Equal(t, 1, refs(b), "released on refusal")

	require.NoError(t, q.Push([]byte(`"held by the writer"`), nil, nil, nil, nil))
	<-w.entered
	// A frame larger than MaxQueued is accepted when nothing else waits.
	require.NoError(t, q.Push([]byte(`"`+strings.Repeat("w", 40)+`"`), nil, nil, nil, nil))
	b = heldBuffer(10)
	assert.ErrorIs(t, q.Push([]byte(`1`), nil, nil, b, nil), ErrQueueFull)
	assert.Equal(t, 1, refs(b), "released on refusal")

	close(w.gate)
	assert.NoError(t, stop())
	assert.ErrorIs(t, q.Push([]byte(`1`), nil, nil, nil, nil), ErrQueueClosed)
}

func TestQueueCloseDropsAndReleases(t *testing.T) {
	w := held(1 << 20)
	q := NewQueue(w, QueueOptions{})
	done := make(chan error, 1)
	go func() { done <- q.Run() }()
	require.NoError(t, q.Push([]byte(`"being written"`), nil, nil, nil, nil))
	<-w.entered
	waiting := heldBuffer(CopyLimit + 1)
	require.NoError(t, q.Push(nil, waiting.B, nil, waiting, nil))
	drained := q.Drained()
	q.Close()
	q.Close() // idempotent
	assert.Equal(t, 1, refs(waiting), "a borrowed body dropped by Close is released")
	<-drained
	close(w.gate)
	assert.NoError(t, <-done)
	assert.Equal(t, []string{`"being written"`}, w.frames(t))
}

func TestQueueWriteError(t *testing.T) {
	boom := errors.New("boom")
	w := &recorder{limit: 1 << 20, err: boom}
	q := NewQueue(w, QueueOptions{})
	done := make(chan error, 1)
	go func() { done <- q.Run() }()
	b := heldBuffer(CopyLimit + 1)
	require.NoError(t, q.Push(nil, b.B, nil, b, nil))
	assert.Equal(t, boom, <-done)
	assert.Equal(t, 1, refs(b), "released after the failed write")
	assert.Equal(t, boom, q.Push([]byte(`1`), nil, nil, nil, nil), "later pushes get the write error")
	<-q.Drained()
}

func TestQueueDrained(t *testing.T) {
	w := held(1 << 20)
	q := NewQueue(w, QueueOptions{})
	stop := runQueue(q)
	defer stop()
	select {
	case <-q.Drained():
	default:
		t.Fatal("an empty queue is drained")
	}
	require.NoError(t, q.Push([]byte(`1`), nil, nil, nil, nil))
	d := q.Drained()
	select {
	case <-d:
		t.Fatal("drained while a frame is being written")
	default:
	}
	w.gate <- struct{}{}
	<-d
}

func TestQueueConcurrentSenders(t *testing.T) {
	w := &recorder{limit: 1 << 20}
	q := NewQueue(w, QueueOptions{})
	stop := runQueue(q)
	const senders, each = 8, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"s":%d,"i":%d,"pad":%q}`, s, i, strings.Repeat("p", (i*131)%(2*CopyLimit)))
				if err := q.Push(nil, []byte(body), nil, nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	<-q.Drained()
	require.NoError(t, stop())
	next := make([]int, senders)
	frames := w.frames(t)
	require.Len(t, frames, senders*each)
	for _, f := range frames {
		var s, i int
		_, err := fmt.Sscanf(f, `{"s":%d,"i":%d,`, &s, &i)
		require.NoError(t, err, f)
		assert.Equal(t, next[s], i, "each sender's frames in its order, once each")
		assert.Len(t, f, len(fmt.Sprintf(`{"s":%d,"i":%d,"pad":""}`, s, i))+(i*131)%(2*CopyLimit))
		next[s] = i + 1
	}
}

// socketPair returns the two ends of a connected Unix socket.
func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "q.sock"))
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	a, err := net.Dial("unix", l.Addr().String())
	require.NoError(t, err)
	b := <-accepted
	require.NotNil(t, b)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.UnixConn), b.(*net.UnixConn)
}

// countingWriter counts the batches Run writes.
type countingWriter struct {
	*nativemsg.Writer
	mu     sync.Mutex
	writes int
}

func (c *countingWriter) WriteFrames(parts [][]byte) error {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return nmrelay.Writer(c.Writer).WriteFrames(parts)
}

func TestQueueDirectWrites(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("direct writes are a Unix path: Windows queues write through the writing goroutine")
	}
	a, b := socketPair(t)
	rc, err := a.SyscallConn()
	require.NoError(t, err)
	w := &countingWriter{Writer: nativemsg.NewWriter(a, &nativemsg.WriterOptions{MaxFrameSize: 1 << 30})}
	q := NewQueue(w, QueueOptions{Direct: rc})
	stop := runQueue(q)

	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf(`{"n":%d}`, i))
		require.NoError(t, q.Send(nil, []byte(want[i]), nil, nil, nil))
	}
	<-q.Drained()
	w.mu.Lock()
	assert.Zero(t, w.writes, "with a reading peer, Send wrote every small frame itself")
	w.mu.Unlock()

	// A peer that does not read: the socket fills, and Run writes the
	// rest once it reads, after the part Send wrote and in order.
	big := strings.Repeat("b", 16<<10)
	for i := range 64 {
		f := fmt.Sprintf(`{"n":%d,"pad":%q}`, 10+i, big)
		want = append(want, f)
		if i%3 == 0 {
			require.NoError(t, q.Push(nil, []byte(f), nil, nil, nil))
		} else {
			require.NoError(t, q.Send(nil, []byte(f), nil, nil, nil))
		}
	}
	got := make(chan []string, 1)
	go func() {
		rd := nativemsg.NewReader(b, &nativemsg.ReaderOptions{MaxFrameSize: 1 << 30})
		var frames []string
		for len(frames) < len(want) {
			body, err := rd.ReadMessage(nil)
			if err != nil {
				break
			}
			frames = append(frames, string(body))
		}
		got <- frames
	}()
	assert.Equal(t, want, <-got)
	<-q.Drained()
	assert.NoError(t, stop())

	// After the connection is closed, Send fails the queue.
	q = NewQueue(w, QueueOptions{Direct: rc})
	done := make(chan error, 1)
	go func() { done <- q.Run() }()
	a.Close()
	require.NoError(t, q.Send(nil, []byte(`1`), nil, nil, nil), "the frame is accepted; its write fails")
	err = <-done
	assert.Error(t, err, "Run returns the write error")
	assert.Error(t, q.Send(nil, []byte(`2`), nil, nil, nil))
}

func TestReadFramePools(t *testing.T) {
	var stream []byte
	for _, body := range []string{`{"small":1}`, `"` + strings.Repeat("m", 2<<20) + `"`, `[3]`} {
		stream = binary.LittleEndian.AppendUint32(stream, uint32(len(body)))
		stream = append(stream, body...)
	}
	r := nativemsg.NewReader(bytes.NewReader(stream), nil)
	frame, buf, err := ReadFrame(r)
	require.NoError(t, err)
	assert.Equal(t, `{"small":1}`, string(frame))
	assert.True(t, buf.Pooled())
	assert.Equal(t, 512, cap(buf.B), "the smallest pooled size")
	buf.Release()

	frame, buf, err = ReadFrame(r)
	require.NoError(t, err)
	assert.Len(t, frame, 2<<20+2)
	assert.True(t, buf.Pooled(), "a large frame's memory goes to the large pool once released")
	buf.Release()

	frame, buf, err = ReadFrame(r)
	require.NoError(t, err)
	assert.Equal(t, `[3]`, string(frame))
	buf.Release()
	_, _, err = ReadFrame(r)
	assert.Equal(t, io.EOF, err)
}

func TestBufferReferences(t *testing.T) {
	b := GetBuffer(1000)
	assert.Equal(t, 1024, cap(b.B))
	b.Retain()
	b.Retain()
	b.Release()
	b.Release()
	assert.Equal(t, 1, refs(b))
	b.Release() // the last: back to the pool
	var nilBuf *Buffer
	nilBuf.Release() // allowed
	big := GetBuffer(4 << 20)
	if cap(big.B) != 0 {
		assert.GreaterOrEqual(t, cap(big.B), 4<<20, "a large pooled buffer that fits")
	} // else nothing is allocated ahead for a large frame
	assert.True(t, big.Pooled())
}

// A frame larger than the socket's buffer is only partly written by Send;
// Run writes the rest as raw bytes (it does not start at a frame boundary)
// before anything queued after it.
func TestQueueDirectWriteEndingInsideAFrame(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("direct writes are a Unix path: Windows queues write through the writing goroutine")
	}
	a, b := socketPair(t)
	rc, err := a.SyscallConn()
	require.NoError(t, err)
	w := &countingWriter{Writer: nativemsg.NewWriter(a, &nativemsg.WriterOptions{MaxFrameSize: 1 << 30})}
	q := NewQueue(w, QueueOptions{Direct: rc, CopyAll: true})
	stop := runQueue(q)

	big := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("b", 4<<20)) // far over a Unix socket's buffer
	want := []string{big, `{"n":1}`, `{"n":2}`}
	require.NoError(t, q.Send(nil, []byte(want[0]), nil, nil, nil))
	require.NoError(t, q.Send(nil, []byte(want[1]), nil, nil, nil))
	require.NoError(t, q.Push(nil, []byte(want[2]), nil, nil, nil))

	require.NoError(t, b.SetReadDeadline(time.Now().Add(time.Minute)))
	rd := nativemsg.NewReader(b, &nativemsg.ReaderOptions{MaxFrameSize: 1 << 30})
	for _, f := range want {
		body, err := rd.ReadMessage(nil)
		require.NoError(t, err)
		require.Equal(t, len(f), len(body))
		require.Equal(t, f, string(body))
	}
	<-q.Drained()
	assert.NoError(t, stop())
}

// With SetDebug (on for every test of this module's agentproto packages),
// a released buffer is overwritten and misuse panics.
func TestBufferDebugChecks(t *testing.T) {
	require.True(t, debug.Load(), "TestMain turns the checks on")
	b := GetBuffer(100)
	b.B = append(b.B, `{"a":1}`...)
	frame := b.B
	b.Release()
	assert.Equal(t, bytes.Repeat([]byte{garbage}, len(frame)), frame, "released memory is overwritten")
	assert.PanicsWithValue(t, "wire: Release of a released buffer", b.Release)
	assert.PanicsWithValue(t, "wire: Retain of a released buffer", b.Retain)

	// Taken from the pool again, it is live. (sync.Pool may drop it: the
	// race detector makes it drop some on purpose.)
	for range 100 {
		c := GetBuffer(100)
		assert.NotPanics(t, c.Retain)
		c.Release()
		c.Release()
	}
}
