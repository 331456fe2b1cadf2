//go:build unix

package wire

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/nativemsg"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stream is a stand-in connection for a Queue: Run's batches
// (WriteFrames) and direct writes (through its RawConn and sysWrite) land
// in one byte stream, as on a socket. Direct writes take at most budget
// bytes in all before the peer is "full" (EAGAIN), and at most chunk bytes
// per write (no limit when 0); once the writer has waited, the budget is
// unlimited.
type stream struct {
	mu     sync.Mutex
	out    bytes.Buffer
	budget int   // bytes taken before EAGAIN; -1 means no limit
	chunk  int   // once waited: the most a write takes; 0 means no limit
	fail   error // returned instead of EAGAIN once the budget is spent
	waits  int
}

func (s *stream) Limit() int { return 1 << 20 }

func (s *stream) WriteFrames(parts [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		s.out.Write(p)
	}
	return nil
}

func (s *stream) sysWrite(_ int, b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(b)
	if s.chunk > 0 {
		n = min(n, s.chunk)
	}
	if s.budget >= 0 {
		n = min(n, s.budget)
		s.budget -= n
	}
	s.out.Write(b[:n])
	if n == 0 && len(b) > 0 {
		if s.fail != nil {
			return 0, s.fail
		}
		return 0, syscall.EAGAIN
	}
	return n, nil
}

func (s *stream) Control(f func(fd uintptr)) error { f(0); return nil }
func (s *stream) Read(func(fd uintptr) bool) error { return nil }
func (s *stream) Write(f func(fd uintptr) bool) error {
	for !f(0) {
		// The poller would wait for room; the peer then reads.
		s.mu.Lock()
		s.waits++
		s.budget = -1
		s.mu.Unlock()
	}
	return nil
}

func (s *stream) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.out.Bytes())
}

func frameBytes(bodies ...string) []byte {
	var b []byte
	for _, body := range bodies {
		b = append(b, byte(len(body)), byte(len(body)>>8), byte(len(body)>>16), byte(len(body)>>24))
		b = append(b, body...)
	}
	return b
}

// A direct write may stop at any byte of its batch: inside a header,
// inside a body, at a frame boundary, or before the first byte. Whatever
// was queued meanwhile (by Push or Send) follows the rest, in order, and
// the stream is exactly the frames.
func TestQueueDirectWriteStopsAnywhere(t *testing.T) {
	a, b, c := `{"a":1}`, `"`+strings.Repeat("b", 300)+`"`, `{"c":[1,2,3]}`
	d, e := `{"d":4}`, `"`+strings.Repeat("e", 40)+`"`
	want := frameBytes(a, b, c, d, e)
	batch := len(frameBytes(a, b, c))
	for _, chunk := range []int{0, 7} {
		for k := 0; k <= batch; k++ {
			s := &stream{budget: k, chunk: chunk}
			q := NewQueue(s, QueueOptions{})
			q.direct = bindDirectWriter(s, s.sysWrite)
			// Run is not started yet: these wait in the queue's buffer,
			// and Send then writes all three itself.
			require.NoError(t, q.Push(nil, []byte(a), nil, nil, nil))
			require.NoError(t, q.Push(nil, []byte(b), nil, nil, nil))
			require.NoError(t, q.Send(nil, []byte(c), nil, nil, nil))
			wantQueued := batch - k
			assert.Equal(t, wantQueued, q.Queued(), "k=%d: the rest waits", k)
			require.NoError(t, q.Push(nil, []byte(d), nil, nil, nil))
			require.NoError(t, q.Send(nil, []byte(e), nil, nil, nil))
			stop := runQueue(q)
			<-q.Drained()
			require.Equal(t, want, s.bytes(), "k=%d chunk=%d", k, chunk)
			assert.Zero(t, q.Queued())
			assert.NoError(t, stop())
		}
	}
}

// A direct write that fails part way fails the queue: Run and later
// pushes get the error, borrowed bodies are released and nothing stays
// counted as queued.
func TestQueueDirectWriteFails(t *testing.T) {
	for k := range 12 {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			s := &stream{budget: k, fail: syscall.EPIPE}
			q := NewQueue(s, QueueOptions{})
			q.direct = bindDirectWriter(s, s.sysWrite)
			done := make(chan error, 1)
			go func() { done <- q.Run() }()
			err := q.Send(nil, []byte(`{"x":12345}`), nil, nil, nil)
			if k >= len(frameBytes(`{"x":12345}`)) {
				require.NoError(t, err)
				require.NoError(t, q.Send(nil, []byte(`[1]`), nil, nil, nil), "the frame is accepted; its write fails")
			} else {
				require.NoError(t, err, "the frame is accepted; its write fails")
			}
			assert.ErrorIs(t, <-done, syscall.EPIPE)
			borrowed := heldBuffer(CopyLimit + 1)
			assert.ErrorIs(t, q.Push(nil, borrowed.B, nil, borrowed, nil), syscall.EPIPE)
			assert.Equal(t, 1, refs(borrowed), "released on refusal")
			assert.Zero(t, q.Queued())
			<-q.Drained()
		})
	}
}

// mixedBody is sender s's i-th frame body, of a size that depends on both.
func mixedBody(s, i int) []byte {
	sizes := []int{20, 200, CopyLimit - 1, CopyLimit, CopyLimit + 1, 31 << 10, 33 << 10, 100 << 10, 1 << 20}
	size := sizes[(s*7+i*13)%len(sizes)]
	b := fmt.Appendf(nil, `{"s":%d,"i":%d,"pad":"`, s, i)
	for len(b) < size-2 {
		b = append(b, byte('a'+(len(b)+s+i)%26))
	}
	return append(b, `"}`...)
}

// Senders mixing Push and Send, small and large frames (large ones
// borrowed from reference-counted buffers, which the debug checks
// overwrite once released), to a peer that reads slowly, over a Unix
// socket and over a pipe: every frame arrives whole, in its sender's
// order, never interleaved with another, and the queue ends empty.
func TestQueueMixedSendersSlowPeer(t *testing.T) {
	for _, transport := range []string{"socket", "pipe"} {
		t.Run(transport, func(t *testing.T) {
			var w interface {
				io.Writer
				SyscallConn() (syscall.RawConn, error)
			}
			var r io.Reader
			if transport == "socket" {
				a, b := socketPair(t)
				w, r = a, b
			} else {
				pr, pw, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { pr.Close(); pw.Close() })
				w, r = pw, pr
			}
			rc, err := w.SyscallConn()
			require.NoError(t, err)
			q := NewQueue(NativeWriter(nativemsg.NewWriter(w, &nativemsg.WriterOptions{MaxFrameSize: 1 << 30})), QueueOptions{Direct: rc})
			require.NotNil(t, q.direct, "the connection is non-blocking")
			stop := runQueue(q)

			const senders, each = 6, 40
			got := make(chan error, 1)
			go func() {
				rd := nativemsg.NewReader(&slowReader{r: r}, &nativemsg.ReaderOptions{MaxFrameSize: 1 << 30})
				next := make([]int, senders)
				for range senders * each {
					body, err := rd.ReadMessage(nil)
					if err != nil {
						got <- err
						return
					}
					var s, i int
					if _, err := fmt.Sscanf(string(body), `{"s":%d,"i":%d,`, &s, &i); err != nil || s < 0 || s >= senders {
						got <- fmt.Errorf("a frame that no sender sent: %.60q", body)
						return
					}
					if i != next[s] || !bytes.Equal(body, mixedBody(s, i)) {
						got <- fmt.Errorf("sender %d: frame %d damaged or out of order (want %d)", s, i, next[s])
						return
					}
					next[s]++
				}
				got <- nil
			}()
			var wg sync.WaitGroup
			for s := range senders {
				wg.Go(func() {
					for i := range each {
						body := mixedBody(s, i)
						var rel *Buffer
						if len(body) > CopyLimit {
							rel = GetBuffer(len(body))
							rel.B = append(rel.B[:0], body...)
							body = rel.B
						}
						var err error
						if (s+i)%2 == 0 {
							err = q.Send(nil, body, nil, rel, nil)
						} else {
							err = q.Push(nil, body, nil, rel, nil)
						}
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, <-got)
			<-q.Drained()
			assert.Zero(t, q.Queued())
			assert.NoError(t, stop())
		})
	}
}

// slowReader reads in small, uneven pieces, pausing now and then, so that
// the writer's buffer fills and writes stop part way.
type slowReader struct {
	r     io.Reader
	reads int
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.reads++
	if s.reads%64 == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	return s.r.Read(p[:min(len(p), 1+(s.reads*7919)%(48<<10))])
}

// Close during a write blocked on a peer that does not read: Run returns
// once the connection is closed, and what was queued is dropped and
// released.
func TestQueueCloseDuringBlockedWrite(t *testing.T) {
	a, _ := socketPair(t)
	rc, err := a.SyscallConn()
	require.NoError(t, err)
	q := NewQueue(NativeWriter(nativemsg.NewWriter(a, &nativemsg.WriterOptions{MaxFrameSize: 1 << 30})), QueueOptions{Direct: rc})
	done := make(chan error, 1)
	go func() { done <- q.Run() }()
	big := heldBuffer(8 << 20) // far more than the socket holds
	big.B[0], big.B[len(big.B)-1] = '"', '"'
	require.NoError(t, q.Send(nil, []byte(`"direct"`), nil, nil, nil))
	require.NoError(t, q.Push(nil, big.B, nil, big, nil))
	waiting := heldBuffer(CopyLimit + 1)
	waiting.B[0], waiting.B[len(waiting.B)-1] = '"', '"'
	for q.Queued() != 0 || isDone(q.Drained()) { // until Run has taken the big frame
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, q.Push(nil, waiting.B, nil, waiting, nil))
	q.Close()
	assert.Equal(t, 1, refs(waiting), "dropped and released by Close")
	select {
	case <-done:
		t.Fatal("Run returned while its write was still blocked")
	default:
	}
	a.Close() // what ends a blocked write
	assert.NoError(t, <-done, "Run returns nil after Close")
	assert.Equal(t, 1, refs(big), "released once its write ended")
	assert.Zero(t, q.Queued())
	<-q.Drained()
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
