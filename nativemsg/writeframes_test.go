package nativemsg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/nmrelay"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func frameBytes(body string) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestWriteFrames(t *testing.T) {
	one, two := frameBytes(`{"a":1}`), frameBytes(`"two"`)
	batch := append(append([]byte{}, one...), two...)
	tests := []struct {
		name    string
		parts   [][]byte
		limit   int
		wantErr error
	}{
		{name: "one part", parts: [][]byte{batch}},
		{name: "split everywhere", parts: [][]byte{batch[:2], batch[2:5], batch[5:11], batch[11:13], batch[13:]}},
		{name: "empty parts between", parts: [][]byte{nil, batch[:7], {}, batch[7:]}},
		{name: "partial header", parts: [][]byte{batch, {1, 0}}, wantErr: nmrelay.ErrPartialFrame},
		{name: "partial body", parts: [][]byte{batch[:len(batch)-1]}, wantErr: nmrelay.ErrPartialFrame},
		{name: "empty frame", parts: [][]byte{{0, 0, 0, 0}}, wantErr: ErrEmptyFrame},
		{name: "over the limit", parts: [][]byte{batch}, limit: 6, wantErr: &FrameSizeError{Size: 7, Limit: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(&out, &WriterOptions{MaxFrameSize: tt.limit})
			partsBefore := make([][]byte, len(tt.parts))
			copy(partsBefore, tt.parts)
			err := w.writeFrames(tt.parts)
			assert.Equal(t, partsBefore, tt.parts, "parts must not be modified")
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr.Error(), err.Error())
				assert.Zero(t, out.Len(), "nothing is written for a refused batch")
				return
			}
			require.NoError(t, err)
			r := NewReader(&out, nil)
			body, err := r.ReadMessage(nil)
			require.NoError(t, err)
			assert.Equal(t, `{"a":1}`, string(body))
			body, err = r.ReadMessage(nil)
			require.NoError(t, err)
			assert.Equal(t, `"two"`, string(body))
		})
	}
}

// countingReader counts the Read calls that reach it.
type countingReader struct {
	r     *bytes.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func TestConnReadBufferSize(t *testing.T) {
	var stream []byte
	for range 10 {
		stream = append(stream, frameBytes(`{"kind":"bridge:hello"}`)...)
	}
	for _, tt := range []struct {
		buffer    int
		wantReads int
	}{{0, 20}, {4096, 1}} {
		src := &countingReader{r: bytes.NewReader(stream)}
		c := NewConn(src, nil, nil, &ConnOptions{ReadBufferSize: tt.buffer})
		for range 10 {
			body, err := c.ReadMessage(nil)
			require.NoError(t, err)
			assert.Equal(t, `{"kind":"bridge:hello"}`, string(body))
		}
		assert.Equal(t, tt.wantReads, src.reads, "buffer %d", tt.buffer)
	}
}

func TestReaderBuffered(t *testing.T) {
	one := frameBytes(`{"kind":"bridge:hello"}`)
	stream := append(append([]byte{}, one...), one...)
	c := NewConn(bytes.NewReader(stream), nil, nil, &ConnOptions{ReadBufferSize: 4096})
	assert.Zero(t, c.buffered(), "nothing read yet")
	_, err := c.ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, len(one), c.buffered(), "the second frame arrived with the first")
	_, err = c.ReadMessage(nil)
	require.NoError(t, err)
	assert.Zero(t, c.buffered())

	unbuffered := NewConn(bytes.NewReader(stream), nil, nil, nil)
	_, err = unbuffered.ReadMessage(nil)
	require.NoError(t, err)
	assert.Zero(t, unbuffered.buffered())
}

// TestWriteFramesToPipe writes batches of many parts to an OS pipe, in one
// writev each: batches larger than the pipe's buffer are written as the
// reader drains it, with partial writes resumed mid-part.
func TestWriteFramesToPipe(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	fw := NewWriter(w, &WriterOptions{MaxFrameSize: 1 << 30})
	if runtime.GOOS != "windows" {
		require.NotNil(t, fw.file, "files are written with writev")
	}

	var want []string
	var batches [][][]byte
	for b := range 3 {
		var parts [][]byte
		for i := range 40 {
			body := fmt.Sprintf(`{"b":%d,"i":%d,"pad":%q}`, b, i, strings.Repeat("p", (i*7919)%(48<<10)))
			want = append(want, body)
			f := frameBytes(body)
			// Split each frame at odd places, with empty parts between.
			cut := min(len(f), 3+i%5)
			parts = append(parts, f[:cut], nil, f[cut:])
		}
		batches = append(batches, parts)
	}
	got := make(chan []string, 1)
	go func() {
		rd := NewReader(r, &ReaderOptions{MaxFrameSize: 1 << 30})
		var bodies []string
		for {
			body, err := rd.ReadMessage(nil)
			if err != nil {
				got <- bodies
				return
			}
			bodies = append(bodies, string(body))
		}
	}()
	for _, parts := range batches {
		require.NoError(t, fw.writeFrames(parts))
	}
	require.NoError(t, w.Close())
	assert.Equal(t, want, <-got)
}

// TestRelayHooks checks that the relay reaches a Writer's and a Reader's
// plumbing through internal/nmrelay.
func TestRelayHooks(t *testing.T) {
	var out bytes.Buffer
	fw := nmrelay.Writer(NewWriter(&out, nil))
	require.NoError(t, fw.WriteFrames([][]byte{frameBytes(`"a"`), frameBytes(`"b"`)}))
	assert.ErrorIs(t, fw.WriteFrames([][]byte{{1, 0}}), nmrelay.ErrPartialFrame)
	_, err := fw.SyscallConn()
	assert.ErrorIs(t, err, nmrelay.ErrNoSyscallConn)

	fr := nmrelay.Reader(NewReader(&out, nil))
	n, err := fr.NextSize()
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Zero(t, fr.Buffered())

	host, browser, err := OSPipe()
	require.NoError(t, err)
	defer browser.Close()
	defer host.Close()
	_, err = nmrelay.Writer(host.Writer).SyscallConn()
	assert.NoError(t, err, "a pipe has a raw connection")
}

// TestBrowsersIsNotShared checks that a caller cannot change the browsers
// the package knows by editing the slice it was given.
func TestBrowsersIsNotShared(t *testing.T) {
	bs := Browsers()
	require.Len(t, bs, 5)
	bs[0] = "netscape"
	assert.Equal(t, Chrome, Browsers()[0])
	b, err := ParseBrowser("Chrome")
	require.NoError(t, err)
	assert.Equal(t, Chrome, b)
}
