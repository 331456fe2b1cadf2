package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLineLength is the longest JSON-RPC line a [StdioTransport]
// accepts when its MaxLineLength is zero: the go-sdk's own default.
const DefaultMaxLineLength = mcp.DefaultMaxLineLength

// StdioTransport is an [mcp.Transport] over a reader and a writer carrying
// newline-delimited JSON-RPC, like [mcp.StdioTransport], that survives bad
// input. The go-sdk's stdio transport ends the session at the first line that
// is not JSON-RPC; this one answers such a line with a JSON-RPC error with id
// null and goes on:
//
//   - a line that is not JSON: -32700 "Parse error";
//   - JSON that is not one JSON-RPC message, a batch (an array), or a line
//     longer than MaxLineLength: -32600 "Invalid Request".
//
// Empty lines are skipped. End of input ends the session.
type StdioTransport struct {
	// In is read for messages; Out receives them, one per line. Writes to
	// Out are serialized.
	In  io.Reader
	Out io.Writer
	// MaxLineLength is the longest line accepted, in bytes. Zero means
	// DefaultMaxLineLength.
	MaxLineLength int
}

// Connect returns the connection. Lines are filtered as the SDK reads them,
// in its reading goroutine: the filter starts none of its own.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = DefaultMaxLineLength
	}
	out := &lockedWriter{w: t.Out}
	in := &lineFilter{r: bufio.NewReaderSize(t.In, 64<<10), out: out, limit: limit}
	return (&mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: limit + 1}).Connect(ctx)
}

// lockedWriter serializes writes, so that the filter's error replies never
// interleave with the session's messages (each is one Write call).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does not close the underlying writer: the process's stdout outlives
// one session.
func (l *lockedWriter) Close() error { return nil }

const (
	parseErrorLine     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
	invalidRequestLine = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}` + "\n"
	batchRefusedLine   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: JSON-RPC batches are not supported"}}` + "\n"
	tooLongLine        = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: line too long"}}` + "\n"
)

// lineFilter is the reader the SDK's transport reads: the valid JSON-RPC
// lines of r, each ending in a newline. Other lines are answered on out and
// dropped.
type lineFilter struct {
	r       *bufio.Reader
	out     io.Writer
	limit   int
	line    []byte // the line being read
	pending []byte // the rest of the current valid line, for Read
	err     error  // the error to return once pending is empty
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.next()
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// Close does nothing: a read blocked on the input cannot be interrupted
// portably, and the process's stdin outlives one session.
func (f *lineFilter) Close() error { return nil }

// next reads one line and either makes it pending or answers it.
func (f *lineFilter) next() {
	f.line = f.line[:0]
	tooLong := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !tooLong {
			if len(f.line)+len(chunk) > f.limit+1 { // +1: the newline
				tooLong, f.line = true, f.line[:0]
			} else {
				f.line = append(f.line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			f.err = err // io.EOF ends the session
			if len(f.line) == 0 && !tooLong {
				return
			}
		}
		break
	}
	reply := tooLongLine
	line := bytes.TrimSpace(f.line)
	if !tooLong {
		reply = checkLine(line)
	}
	switch {
	case reply != "":
		if _, err := io.WriteString(f.out, reply); err != nil {
			f.err = err
		}
	case len(line) > 0:
		f.pending = append(line, '\n')
	}
}

// checkLine returns the error reply for line, or "" when it is one JSON-RPC
// message (or empty).
func checkLine(line []byte) string {
	if len(line) == 0 {
		return ""
	}
	if !json.Valid(line) {
		return parseErrorLine
	}
	if line[0] == '[' {
		return batchRefusedLine
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return invalidRequestLine
	}
	return ""
}
