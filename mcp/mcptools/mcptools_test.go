package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callerFunc adapts a function to agentproto.Caller.
type callerFunc func(ctx context.Context, typ string, payload any, result any) error

func (f callerFunc) Call(ctx context.Context, typ string, payload any, result any) error {
	return f(ctx, typ, payload, result)
}

// connect runs server on the SDK's in-memory transports and returns a client
// session.
func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// TestBridgeCallContext: the bridge call runs with the MCP request's context,
// so the client's cancellation reaches it.
func TestBridgeCallContext(t *testing.T) {
	entered := make(chan struct{})
	seen := make(chan error, 1)
	caller := callerFunc(func(ctx context.Context, typ string, _ any, _ any) error {
		close(entered)
		<-ctx.Done()
		seen <- ctx.Err()
		return ctx.Err()
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	cs := connect(t, server)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.BrowserSnapshot, Arguments: map[string]any{}})
		done <- err
	}()
	<-entered
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge call's context was not cancelled")
	}
}

// TestBridgeErrorText: a bridge error is a tool result with the bridge's
// message, unchanged.
func TestBridgeErrorText(t *testing.T) {
	caller := callerFunc(func(context.Context, string, any, any) error {
		return &agentproto.RemoteError{Message: agentproto.MsgExtensionOffline}
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	cs := connect(t, server)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserScreenshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Equal(t, agentproto.MsgExtensionOffline, res.Content[0].(*mcp.TextContent).Text)
}

// filterMessages runs the stdio line reader over input and returns the
// messages it passed on and what it answered.
func filterMessages(input string, limit int) (passed []jsonrpc.Message, answered string) {
	var out bytes.Buffer
	l := &lineReader{r: bufio.NewReaderSize(strings.NewReader(input), 16), out: &out, limit: limit}
	for {
		msg, err := l.next()
		if err != nil {
			return passed, out.String()
		}
		passed = append(passed, msg)
	}
}

// filter is filterMessages with the messages encoded again, one per line.
func filter(input string, limit int) (passed, answered string) {
	msgs, answered := filterMessages(input, limit)
	var got bytes.Buffer
	for _, msg := range msgs {
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			panic(err)
		}
		got.Write(append(data, '\n'))
	}
	return got.String(), answered
}

func TestFilterLines(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	passed, answered := filter(good+"\n\n  \nnope\n"+good+"\r\n"+strings.Repeat("x", 100)+"\n[1]\n"+good, 64)
	assert.Equal(t, good+"\n"+good+"\n"+good+"\n", passed, "valid lines pass, the last one without its newline too")
	assert.Equal(t, parseErrorLine+tooLongLine+batchRefusedLine, answered)

	// A long line is refused whole, even when it spans reads.
	passed, answered = filter(strings.Repeat(`{"a":1}`, 10000)+"\n"+good+"\n", 1000)
	assert.Equal(t, good+"\n", passed)
	assert.Equal(t, tooLongLine, answered)

	// JSON that is not a JSON-RPC message, or nested too deeply.
	deep := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`
	passed, answered = filter(`{"jsonrpc":"1.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":true,"method":"x"}`+"\n"+
		`{"jsonrpc":"2.0","result":{}}`+"\n"+deep+"\n"+good, 1<<20)
	assert.Equal(t, good+"\n", passed)
	assert.Equal(t, strings.Repeat(invalidRequestLine, 4), answered)
}

// decodeCorpus are lines decodeMessage must read exactly as the SDK's
// jsonrpc.DecodeMessage.
var decodeCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\u00e9\"b","method":"tools/call","params":{"name":"x","arguments":{"k":[1,2,{"z":null}]}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-7,"method":""}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"x"}`,
	`{"JSONRPC":"2.0","id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","ID":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":[1,"2"]}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":"r","result":null}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no","data":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":2,"error":null}`,
	`{"jsonrpc":"2.0","id":2,"error":{"code":"x"}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0"}`,
	`{"jsonrpc":2,"id":1,"method":"x"}`,
	`{}`,
	`"just a string"`,
	`42`,
	`null`,
	`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","extra":{"deep":[[[[]]]]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"[[[[{{{{"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
}

// sameDecode checks that decodeMessage reads line as jsonrpc.DecodeMessage:
// both fail, or both give the same message.
func sameDecode(t *testing.T, line string) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage([]byte(line))
	got, err := decodeMessage([]byte(line))
	if wantErr != nil {
		require.Error(t, err, "the SDK refuses %q: %v", line, wantErr)
		return
	}
	require.NoError(t, err, "the SDK reads %q", line)
	require.Equal(t, want, got, line)
}

func TestDecodeMessageAsSDK(t *testing.T) {
	for _, line := range decodeCorpus {
		if json.Valid([]byte(line)) {
			sameDecode(t, line)
		}
	}
	// The decoded message owns its bytes: the line buffer is reused.
	line := []byte(`{"jsonrpc":"2.0","id":"abc","method":"m","params":{"k":"v"}}`)
	msg, err := decodeMessage(line)
	require.NoError(t, err)
	for i := range line {
		line[i] = ' '
	}
	req := msg.(*jsonrpc.Request)
	assert.Equal(t, "m", req.Method)
	assert.Equal(t, `{"k":"v"}`, string(req.Params))
	assert.Equal(t, "abc", req.ID.Raw())
}

func FuzzDecodeMessage(f *testing.F) {
	for _, line := range decodeCorpus {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !json.Valid([]byte(line)) {
			return // decodeLine answers -32700 before decoding
		}
		sameDecode(t, line)
	})
}

func FuzzFilterLines(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	f.Add("garbage\n{}\n[]\n")
	f.Add(`{"jsonrpc":"2.0","id":null,"result":{}}`)
	f.Add(`{"jsonrpc":"2.0","":0,"method":""}`)
	const limit = 256
	f.Fuzz(func(t *testing.T, input string) {
		passed, answered := filterMessages(input, limit)
		// The model: each line on its own, with the SDK's DecodeMessage as
		// the judge of what is one JSON-RPC message.
		var want []jsonrpc.Message
		var replies strings.Builder
		for line := range strings.Lines(input) {
			if len(line) > limit+1 {
				replies.WriteString(tooLongLine)
				continue
			}
			line = strings.TrimSpace(line)
			switch msg, err := jsonrpc.DecodeMessage([]byte(line)); {
			case line == "":
			case !json.Valid([]byte(line)):
				replies.WriteString(parseErrorLine)
			case line[0] == '[':
				replies.WriteString(batchRefusedLine)
			case err != nil:
				replies.WriteString(invalidRequestLine)
			default:
				want = append(want, msg)
			}
		}
		require.Equal(t, want, passed)
		require.Equal(t, replies.String(), answered)
	})
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost": true, "LOCALHOST:1": true, "[::1]:9": true, "127.1.2.3": true,
		"evil.example": false, "0.0.0.0:80": false, "": false, "localhost.evil.example": false, "[::ffff:127.0.0.1]:1": true,
	} {
		assert.Equal(t, want, loopbackHost(host), host)
	}
}

func TestNewHTTPHandlerNeedsToken(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	_, err := NewHTTPHandler(server, "", &HTTPOptions{})
	assert.True(t, errors.Is(err, ErrNoToken))
	// The options are optional: nil means defaults.
	h, err := NewHTTPHandler(server, "tok", nil)
	require.NoError(t, err)
	assert.NotNil(t, h)
}

// TestStdioTransportAllocations: a message costs the transport about its own
// size, not the SDK decoder's 32 KiB buffer per decode (the line filter in
// front of the SDK's IOTransport decoded each line three times over, about
// 160 KiB per message).
func TestStdioTransportAllocations(t *testing.T) {
	const n = 200
	line := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"browser_snapshot","arguments":{}}}` + "\n"
	conn, err := (&StdioTransport{In: strings.NewReader(strings.Repeat(line, n)), Out: io.Discard}).Connect(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		msg, err := conn.Read(t.Context())
		require.NoError(t, err)
		require.Equal(t, "tools/call", msg.(*jsonrpc.Request).Method)
	}
	runtime.ReadMemStats(&after)
	perMessage := (after.TotalAlloc - before.TotalAlloc) / n
	assert.Less(t, perMessage, uint64(8<<10), "bytes allocated per message")
	_, err = conn.Read(t.Context())
	assert.ErrorIs(t, err, io.EOF)
}

// TestStdioTransportClose: Close unblocks a Read waiting for input, and the
// reading goroutine ends with the input (goleak checks it).
func TestStdioTransportClose(t *testing.T) {
	in, w := io.Pipe()
	conn, err := (&StdioTransport{In: in, Out: io.Discard}).Connect(t.Context())
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(t.Context())
		read <- err
	}()
	require.NoError(t, conn.Close())
	assert.ErrorIs(t, <-read, io.EOF)
	require.NoError(t, conn.Close(), "Close is idempotent")
	w.Close()
}
