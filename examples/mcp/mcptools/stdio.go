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

// Connect starts the line filter and returns the connection. The filter's
// goroutine ends at the end of In, or when the connection is closed and In
// returns from its current read.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = DefaultMaxLineLength
	}
	out := &lockedWriter{w: t.Out}
	pr, pw := io.Pipe()
	go filterLines(t.In, pw, out, limit)
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: limit + 1}).Connect(ctx)
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

// filterLines copies valid JSON-RPC lines from in to pw and answers the others
// on out. It closes pw at the end of in (or with the read error).
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	r := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 && !tooLong {
			if len(line)+len(chunk) > limit+1 { // +1: the newline
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		complete := err == nil || (errors.Is(err, io.EOF) && (len(line) > 0 || tooLong))
		if complete {
			var reply string
			if tooLong {
				reply = tooLongLine
			} else {
				reply = checkLine(bytes.TrimSpace(line))
			}
			switch {
			case reply == "" && len(bytes.TrimSpace(line)) > 0:
				msg := append(bytes.TrimSpace(line), '\n')
				if _, werr := pw.Write(msg); werr != nil {
					return // the session is closed
				}
			case reply != "":
				if _, werr := io.WriteString(out, reply); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			}
			line, tooLong = line[:0], false
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				pw.Close()
			} else {
				pw.CloseWithError(err)
			}
			return
		}
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
