package nativemsg

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func frame(body string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func TestReadMessageSplitAtEveryByte(t *testing.T) {
	bodies := []string{`{"kind":"bridge:hello"}`, `"héllo wörld ✓ 日本語 🎉"`, `[1,2,3]`, `null`}
	var stream []byte
	for _, b := range bodies {
		stream = append(stream, frame(b)...)
	}
	// Every way of cutting the stream in two, plus one byte at a time.
	for cut := 0; cut <= len(stream); cut++ {
		r := NewReader(io.MultiReader(bytes.NewReader(stream[:cut]), bytes.NewReader(stream[cut:])), nil)
		for _, want := range bodies {
			got, err := r.ReadMessage(nil)
			require.NoError(t, err, "cut at %d", cut)
			require.Equal(t, want, string(got), "cut at %d", cut)
		}
		_, err := r.ReadMessage(nil)
		require.Equal(t, io.EOF, err)
	}
	r := NewReader(iotest.OneByteReader(bytes.NewReader(stream)), nil)
	for _, want := range bodies {
		got, err := r.ReadMessage(nil)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

func TestReadMessageSeveralFramesInOneRead(t *testing.T) {
	stream := append(frame(`{"a":1}`), frame(`{"b":2}`)...)
	r := NewReader(bytes.NewReader(stream), nil)
	var buf []byte
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		got, err := r.ReadMessage(buf[:0])
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		buf = got
	}
}

func TestReadMessageReusesBuffer(t *testing.T) {
	r := NewReader(bytes.NewReader(append(frame(`{"a":1}`), frame(`{"b":22}`)...)), nil)
	buf := make([]byte, 0, 64)
	got, err := r.ReadMessage(buf)
	require.NoError(t, err)
	assert.Same(t, &buf[:1][0], &got[0], "body should be read into the caller's buffer")
	got2, err := r.ReadMessage(got[:0])
	require.NoError(t, err)
	assert.Same(t, &got[0], &got2[0])
	assert.Equal(t, `{"b":22}`, string(got2))
}

func TestReadMessageErrors(t *testing.T) {
	tests := []struct {
		name   string
		stream []byte
		limit  int
		check  func(t *testing.T, err error)
	}{
		{"clean EOF", nil, 0, func(t *testing.T, err error) { assert.Equal(t, io.EOF, err) }},
		{"truncated header", []byte{5, 0}, 0, func(t *testing.T, err error) { assert.Equal(t, io.ErrUnexpectedEOF, err) }},
		{"truncated body", frame(`{"a":1}`)[:8], 0, func(t *testing.T, err error) { assert.Equal(t, io.ErrUnexpectedEOF, err) }},
		{"header only", []byte{5, 0, 0, 0}, 0, func(t *testing.T, err error) { assert.Equal(t, io.ErrUnexpectedEOF, err) }},
		{"empty frame", frame(""), 0, func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrEmptyFrame) }},
		{"not JSON", frame("hello"), 0, func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrInvalidJSON) }},
		{"blank body", frame("   "), 0, func(t *testing.T, err error) { assert.ErrorIs(t, err, ErrInvalidJSON) }},
		{"over limit", frame(`"12345"`), 6, func(t *testing.T, err error) {
			var fse *FrameSizeError
			require.ErrorAs(t, err, &fse)
			assert.Equal(t, FrameSizeError{Size: 7, Limit: 6}, *fse)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tc.stream), &ReaderOptions{MaxFrameSize: tc.limit})
			_, err := r.ReadMessage(nil)
			tc.check(t, err)
		})
	}
}

func TestReaderKeepsStepAfterBadBody(t *testing.T) {
	stream := append(append(frame("oops"), frame("")...), frame(`{"ok":true}`)...)
	r := NewReader(bytes.NewReader(stream), nil)
	_, err := r.ReadMessage(nil)
	assert.ErrorIs(t, err, ErrInvalidJSON)
	_, err = r.ReadMessage(nil)
	assert.ErrorIs(t, err, ErrEmptyFrame)
	got, err := r.ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, `{"ok":true}`, string(got))
}

func TestHugeHeaderRefusedWithoutAllocating(t *testing.T) {
	header := []byte{0xff, 0xff, 0xff, 0xff} // 4 GiB - 1
	var before, after runtime.MemStats
	var fse *FrameSizeError
	r := NewReader(bytes.NewReader(header), nil)
	runtime.ReadMemStats(&before)
	_, err := r.ReadMessage(nil)
	runtime.ReadMemStats(&after)
	require.ErrorAs(t, err, &fse)
	assert.Equal(t, FrameSizeError{Size: 1<<32 - 1, Limit: DefaultReadLimit}, *fse)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "a refused header must not allocate its claimed size")
	// The error sticks: the stream is out of step.
	_, err = r.ReadMessage(nil)
	assert.ErrorAs(t, err, &fse)
}

func TestLargeClaimAllocatesOnlyWhatArrives(t *testing.T) {
	// Within an (unwisely) huge limit, a header claiming 3 GiB followed by
	// a few bytes must cost memory for the bytes, not the claim.
	stream := append(binary.LittleEndian.AppendUint32(nil, 3<<30), `{"a":1}`...)
	r := NewReader(bytes.NewReader(stream), &ReaderOptions{MaxFrameSize: math.MaxInt})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadMessage(nil)
	runtime.ReadMemStats(&after)
	assert.Equal(t, io.ErrUnexpectedEOF, err)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20))

	// A real large frame still arrives whole.
	body := `"` + strings.Repeat("z", 5<<20) + `"`
	r = NewReader(bytes.NewReader(frame(body)), nil)
	got, err := r.ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
}

func TestLargeBodyMemoryGrowsWithWhatArrives(t *testing.T) {
	// A 64 MiB claim of which 6 MiB arrive: the memory held stays within
	// growthFactor times what arrived.
	const sent = 6 << 20
	stream := append(binary.LittleEndian.AppendUint32(nil, 64<<20), '"')
	stream = append(stream, bytes.Repeat([]byte("y"), sent-1)...)
	r := NewReader(bytes.NewReader(stream), nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadMessage(nil)
	runtime.ReadMemStats(&after)
	assert.Equal(t, io.ErrUnexpectedEOF, err)
	// Allocations: 1 MiB, 4 MiB, 16 MiB (the last after 4 MiB arrived).
	assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(22<<20))

	// A 16 MiB body arrives whole after two copies (of 1 and 4 MiB), not
	// four as doubling would make.
	body := `"` + strings.Repeat("z", 16<<20-2) + `"`
	r = NewReader(bytes.NewReader(frame(body)), nil)
	runtime.ReadMemStats(&before)
	got, err := r.ReadMessage(nil)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
	assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(22<<20))
}

func TestNextSize(t *testing.T) {
	stream := append(frame(`{"a":1}`), 0, 0, 0, 0)
	stream = append(stream, frame(`[2]`)...)
	r := NewReader(bytes.NewReader(stream), nil)

	n, err := r.nextSize()
	require.NoError(t, err)
	assert.Equal(t, 7, n)
	n, err = r.nextSize()
	require.NoError(t, err)
	assert.Equal(t, 7, n, "asking again does not read further")
	body, err := r.ReadMessage(make([]byte, 0, n))
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(body))

	n, err = r.nextSize()
	require.NoError(t, err)
	assert.Zero(t, n, "an empty frame")
	_, err = r.ReadMessage(nil)
	assert.ErrorIs(t, err, ErrEmptyFrame)

	body, err = r.ReadMessage(nil) // without NextSize
	require.NoError(t, err)
	assert.Equal(t, `[2]`, string(body))
	_, err = r.nextSize()
	assert.Equal(t, io.EOF, err)

	r = NewReader(bytes.NewReader(frame(`"too long"`)), &ReaderOptions{MaxFrameSize: 4})
	_, err = r.nextSize()
	var fse *FrameSizeError
	require.ErrorAs(t, err, &fse)
	_, err = r.ReadMessage(nil)
	assert.ErrorAs(t, err, &fse, "the error sticks")
}

func TestErrorsCarryNoPayload(t *testing.T) {
	secret := "tok-SECRET-123"
	r := NewReader(bytes.NewReader(frame("x"+secret)), nil)
	_, err := r.ReadMessage(nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)

	r = NewReader(bytes.NewReader(frame(`{"token":"`+secret+`"`)), nil)
	var v any
	err = r.Decode(&v)
	require.ErrorIs(t, err, ErrInvalidJSON)
	assert.NotContains(t, err.Error(), secret)

	w := NewWriter(io.Discard, &WriterOptions{MaxFrameSize: 4})
	err = w.WriteMessage([]byte(`"` + secret + `"`))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
}

func TestWriterLimit(t *testing.T) {
	body := make([]byte, DefaultWriteLimit)
	body[0] = '"'
	for i := 1; i < len(body)-1; i++ {
		body[i] = 'a'
	}
	body[len(body)-1] = '"'

	var out bytes.Buffer
	w := NewWriter(&out, nil)
	require.NoError(t, w.WriteMessage(body), "exactly 1,048,576 bytes must be accepted")
	assert.Equal(t, headerSize+DefaultWriteLimit, out.Len())
	assert.Equal(t, uint32(DefaultWriteLimit), binary.LittleEndian.Uint32(out.Bytes()))

	out.Reset()
	tooBig := append(append([]byte{'"'}, body[1:len(body)-1]...), 'a', '"')
	require.Len(t, tooBig, DefaultWriteLimit+1)
	err := w.WriteMessage(tooBig)
	var fse *FrameSizeError
	require.ErrorAs(t, err, &fse)
	assert.Equal(t, FrameSizeError{Size: DefaultWriteLimit + 1, Limit: DefaultWriteLimit}, *fse)
	assert.Zero(t, out.Len(), "nothing may be written for a refused frame")

	err = w.Encode(string(tooBig[1 : len(tooBig)-1]))
	require.ErrorAs(t, err, &fse)
	assert.Equal(t, uint64(DefaultWriteLimit+1), fse.Size)
	assert.Zero(t, out.Len())

	assert.ErrorIs(t, w.WriteMessage(nil), ErrEmptyFrame)
}

// writeCounter records each Write call separately.
type writeCounter struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWriterOneWritePerFrame(t *testing.T) {
	var wc writeCounter
	w := NewWriter(&wc, nil)
	require.NoError(t, w.WriteMessage([]byte(`{"a":1}`)))
	require.NoError(t, w.Encode(map[string]string{"html": "<b>&</b>"}))
	require.Len(t, wc.writes, 2)
	assert.Equal(t, frame(`{"a":1}`), wc.writes[0])
	assert.Equal(t, frame(`{"html":"<b>&</b>"}`), wc.writes[1], "no trailing newline, no HTML escaping")
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	type msg struct {
		Kind    string         `json:"kind"`
		ID      int            `json:"id"`
		Payload map[string]any `json:"payload"`
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, nil)
	in := msg{Kind: "bridge:request", ID: 7, Payload: map[string]any{"text": "日本語 \u2028 ✓"}}
	require.NoError(t, w.Encode(in))
	var out msg
	require.NoError(t, NewReader(&buf, nil).Decode(&out))
	assert.Equal(t, in, out)

	err := NewReader(bytes.NewReader(frame(`{"kind":1}`)), nil).Decode(&out)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrInvalidJSON, "a type mismatch is not a syntax error")
	buf.Reset()
	assert.Error(t, w.Encode(func() {}))
	assert.Zero(t, buf.Len(), "a value that cannot be encoded writes nothing")
}

func TestConcurrentWritersKeepFramesIntact(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw, nil)
	const writers, each = 16, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				// Bodies of different sizes so that interleaving would show.
				body, _ := json.Marshal(map[string]any{"g": g, "i": i, "pad": strings.Repeat("x", (g*37+i)%3000)})
				if err := w.WriteMessage(body); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); pw.Close() }()

	r := NewReader(pr, nil)
	next := make([]int, writers)
	var buf []byte
	for {
		body, err := r.ReadMessage(buf[:0])
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		buf = body
		var m struct{ G, I int }
		require.NoError(t, json.Unmarshal(body, &m))
		require.Equal(t, next[m.G], m.I, "frames of one writer arrive in order")
		next[m.G]++
	}
	for g := range writers {
		assert.Equal(t, each, next[g])
	}
}

func TestPipe(t *testing.T) {
	host, browser := Pipe()
	testPipe(t, host, browser)
}

func TestOSPipe(t *testing.T) {
	host, browser, err := OSPipe()
	require.NoError(t, err)
	big := `"` + strings.Repeat("b", 8<<10) + `"`
	if runtime.GOOS == "windows" {
		// Windows anonymous pipes hold 4 KiB: the write waits for the read.
		go func() { _ = browser.WriteMessage([]byte(big)) }()
	} else {
		// Unlike Pipe's, a write returns once the pipe holds it.
		require.NoError(t, browser.WriteMessage([]byte(big)))
	}
	got, err := host.ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, big, string(got))
	testPipe(t, host, browser)
}

func testPipe(t *testing.T, host, browser *Conn) {
	defer host.Close()
	defer browser.Close()
	assert.Equal(t, DefaultReadLimit, host.Reader.Limit())
	assert.Equal(t, DefaultWriteLimit, host.Writer.Limit())
	assert.Equal(t, DefaultWriteLimit, browser.Reader.Limit())
	assert.Equal(t, DefaultReadLimit, browser.Writer.Limit())

	go func() { _ = browser.Encode(map[string]string{"kind": "bridge:hello"}) }()
	var hello map[string]string
	require.NoError(t, host.Decode(&hello))
	assert.Equal(t, "bridge:hello", hello["kind"])

	require.NoError(t, browser.Close())
	require.NoError(t, browser.Close(), "Close is idempotent")
	_, err := host.ReadMessage(nil)
	assert.Equal(t, io.EOF, err)
}

// TestOSPipeCloseInterruptsBlockedRead checks that OSPipe's ends stay
// non-blocking (served by Go's poller): Close must then make a read that
// is blocked waiting for the browser return at once. With blocking
// descriptors the read would wait for the browser forever. The wait is
// bounded generously; BenchmarkOSPipeCloseInterruptsRead measures the time.
func TestOSPipeCloseInterruptsBlockedRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows anonymous pipes are synchronous handles outside Go's poller: Close does not interrupt a blocked ReadFile (documented on OSPipe)")
	}
	host, browser, err := OSPipe()
	require.NoError(t, err)
	defer browser.Close()
	done := make(chan error, 1)
	go func() {
		_, err := host.ReadMessage(nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read block first
	start := time.Now()
	require.NoError(t, host.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, os.ErrClosed)
		t.Logf("the blocked read returned %v after Close", time.Since(start))
	case <-time.After(10 * time.Second):
		// Unblock the reader so that the goroutine ends.
		browser.WriteMessage([]byte(`"bye"`))
		<-done
		t.Fatal("Close did not interrupt a read blocked on OSPipe")
	}
}
