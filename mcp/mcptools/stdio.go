package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
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
//   - JSON that is not one JSON-RPC message or a batch, or a line longer
//     than MaxLineLength: -32600 "Invalid Request".
//
// A batch (a JSON array of messages) is accepted until the session has
// negotiated protocol 2025-06-18 or later, which removed batching, as the
// go-sdk's own transports do: 2025-03-26 requires servers to accept them.
// Its requests run as single ones, and their responses go out together, as
// one array on one line, once each is answered (a request the client
// cancelled is left out); its notifications get none. An element that is not
// a JSON-RPC message, or a request whose id another request of the session's
// batches holds, is answered in that array with -32600. An empty batch, or
// one of more than MaxBatchLength messages, gets one -32600 with id null. At
// 2025-06-18 and later a batch gets -32600 "JSON-RPC batches are not
// supported".
//
// Empty lines are skipped. End of input ends the session.
//
// Each line is checked and decoded once, here, with the go-sdk's own JSON
// library and rules (case-sensitive member names, nesting limited to 1000
// levels), but without the 32 KiB buffer the SDK's decoder allocates for
// every message (see the benchmarks in mcp/README.md).
type StdioTransport struct {
	// In is read for messages; Out receives them, one per line. Writes to
	// Out are serialized.
	In  io.Reader
	Out io.Writer
	// MaxLineLength is the longest line accepted, in bytes. Zero means
	// DefaultMaxLineLength.
	MaxLineLength int
	// MaxBatchLength is the most messages a batch may hold. Zero means
	// DefaultMaxBatchLength.
	MaxBatchLength int
}

// DefaultMaxBatchLength is the most messages a JSON-RPC batch may hold on a
// [StdioTransport] when its MaxBatchLength is zero: a batch's responses are
// kept until the last is ready, so its length bounds what one line can make
// the server hold.
const DefaultMaxBatchLength = 100

// Connect returns the connection. It starts one goroutine, which reads In
// (so that Close can interrupt a Read); it ends at the end of In, or at the
// first line read after Close. Closing the connection closes neither In nor
// Out: the process's stdin and stdout outlive one session.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = DefaultMaxLineLength
	}
	maxBatch := t.MaxBatchLength
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatchLength
	}
	out := &lockedWriter{w: t.Out}
	b := &batcher{maxLen: maxBatch}
	c := &stdioConn{
		out:      out,
		batches:  b,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
	}
	lines := &lineReader{r: bufio.NewReaderSize(t.In, 64<<10), out: out, limit: limit, batches: b}
	go c.readLoop(lines)
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is the [mcp.Connection] of a [StdioTransport].
type stdioConn struct {
	out       *lockedWriter
	batches   *batcher
	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
}

// readLoop hands the messages of lines to Read until an error (which it
// hands on too) or Close.
func (c *stdioConn) readLoop(lines *lineReader) {
	for {
		msg, err := lines.next()
		select {
		case c.incoming <- readResult{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if batch, inBatch := c.batches.respond(resp); inBatch {
			if batch == nil {
				return nil // the batch waits for other responses
			}
			_, err := c.out.Write(batch)
			return err
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// lockedWriter serializes writes, so that error replies to bad lines never
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

const (
	parseErrorLine     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
	invalidRequestLine = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}` + "\n"
	batchRefusedLine   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: JSON-RPC batches are not supported"}}` + "\n"
	tooLongLine        = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: line too long"}}` + "\n"
	emptyBatchLine     = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: empty batch"}}` + "\n"
	longBatchLine      = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: batch too long"}}` + "\n"
)

// lineReader reads the JSON-RPC messages of r, one per line. Other lines are
// answered on out and dropped.
type lineReader struct {
	r       *bufio.Reader
	out     io.Writer
	limit   int
	batches *batcher          // nil: batches are refused
	queue   []jsonrpc.Message // the rest of the last batch
	line    []byte            // the line being read (reused: decoding copies)
	err     error             // the error to return once the current line is handled
}

// next returns the next valid message, answering bad lines on its way.
func (l *lineReader) next() (jsonrpc.Message, error) {
	for {
		if len(l.queue) > 0 {
			msg := l.queue[0]
			l.queue = l.queue[1:]
			return msg, nil
		}
		if l.err != nil {
			return nil, l.err
		}
		line, tooLong := l.readLine()
		reply := tooLongLine
		var msg jsonrpc.Message
		if !tooLong {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			if line[0] == '[' && l.batches.accepted() && json.Valid(line) {
				var answer []byte
				l.queue, answer = l.batches.add(line)
				l.write(answer)
				continue
			}
			msg, reply = decodeLine(line)
			if reply == "" {
				l.write(l.batches.saw(msg))
				return msg, nil
			}
		}
		l.write([]byte(reply))
	}
}

// write writes an answer of the reader's own; an error ends the reading
// once the current line is handed on.
func (l *lineReader) write(answer []byte) {
	if len(answer) == 0 {
		return
	}
	if _, err := l.out.Write(answer); err != nil {
		l.err = err
	}
}

// readLine reads one line, or reports it too long (having skipped it). A
// read error is kept for the next call, after the line read before it.
func (l *lineReader) readLine() (line []byte, tooLong bool) {
	l.line = l.line[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.line)+len(chunk) > l.limit+1 { // +1: the newline
				tooLong, l.line = true, l.line[:0]
			} else {
				l.line = append(l.line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			l.err = err // io.EOF ends the session
		}
		return l.line, tooLong
	}
}

// decodeLine decodes a non-empty line, or returns the error reply for it.
func decodeLine(line []byte) (jsonrpc.Message, string) {
	if !json.Valid(line) {
		return nil, parseErrorLine
	}
	if line[0] == '[' {
		return nil, batchRefusedLine
	}
	msg, err := decodeMessage(line)
	if err != nil {
		return nil, invalidRequestLine
	}
	return msg, ""
}

// maxDepth is the deepest nesting of a message, as the go-sdk's decoder.
const maxDepth = 1000

// errTooDeep is decodeMessage's error for a message nested too deeply.
var errTooDeep = fmt.Errorf("JSON nested deeper than %d levels", maxDepth)

// wireMessage is a JSON-RPC message as the go-sdk's decoder reads it.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage is [jsonrpc.DecodeMessage] for one valid JSON value: the same
// library, flags, checks and result. It exists because the SDK's decoder
// allocates a 32 KiB buffer per call (above the Go runtime's largest small
// object, 32,760 bytes, so each is a large allocation: heap lock, zeroed, a
// span of its own to sweep), where this parses data in place.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	if tooDeep(data) {
		return nil, errTooDeep
	}
	var w wireMessage
	if _, err := sjson.Parse(data, &w, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 { // "method" is present: a request
		var method string
		if _, err := sjson.Parse(w.Method, &method, sjson.DontMatchCaseInsensitiveStructFields); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request: a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil { // no typed nil in the error interface
		resp.Error = w.Error
	}
	return resp, nil
}

// tooDeep reports whether the arrays and objects of data (valid JSON) nest
// deeper than maxDepth.
func tooDeep(data []byte) bool {
	depth := 0
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			if depth > maxDepth {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}
