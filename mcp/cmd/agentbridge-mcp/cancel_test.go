package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wire records every line a stream carried, reading it to its end even
// when the reader it feeds is gone.
type wire struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ended chan struct{}
}

// tap copies src into w and into the returned reader.
func (w *wire) tap(src io.Reader) io.Reader {
	pr, pw := io.Pipe()
	w.ended = make(chan struct{})
	go func() {
		defer close(w.ended)
		defer pw.Close()
		sc := bufio.NewScanner(src)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			w.mu.Lock()
			w.buf.Write(sc.Bytes())
			w.buf.WriteByte('\n')
			w.mu.Unlock()
			_, _ = pw.Write(append(sc.Bytes(), '\n')) // fails once the client is gone: keep recording
		}
	}()
	return pr
}

// messages returns the recorded lines as JSON-RPC messages.
func (w *wire) messages(t *testing.T) []map[string]json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]json.RawMessage
	for line := range bytes.Lines(w.buf.Bytes()) {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		out = append(out, m)
	}
	return out
}

// tapped is a session of the go-sdk client with the built binary over its
// standard streams, each direction recorded.
type tapped struct {
	cs             *mcp.ClientSession
	cmd            *exec.Cmd
	sent, received wire
}

func startTapped(t *testing.T, env []string, args ...string) (*tapped, *syncBuffer) {
	cmd, stderr := command(t, env, args...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &tapped{cmd: cmd}
	clientIn := s.received.tap(stdout)
	pr, pw := io.Pipe()
	go func() { _, _ = io.Copy(stdin, s.sent.tap(pr)); stdin.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s.cs, err = client.Connect(t.Context(), &mcp.IOTransport{Reader: io.NopCloser(clientIn), Writer: pw}, nil)
	require.NoError(t, err, "stderr:\n%s", stderr)
	return s, stderr
}

// assertNoResponse ends the session, waits for the server to exit (so that
// everything it wrote is recorded), and checks that the call of tool was
// cancelled and got no response.
func (s *tapped) assertNoResponse(t *testing.T, tool string) {
	require.NoError(t, s.cs.Close())
	<-s.received.ended
	require.NoError(t, s.cmd.Wait())
	var id json.RawMessage
	for _, m := range s.sent.messages(t) {
		if string(m["method"]) == `"tools/call"` && bytes.Contains(m["params"], []byte(`"`+tool+`"`)) {
			id = m["id"]
		}
	}
	require.NotNil(t, id, "the request")
	cancelled := false
	for _, m := range s.sent.messages(t) {
		cancelled = cancelled || (string(m["method"]) == `"notifications/cancelled"` && bytes.Contains(m["params"], id))
	}
	assert.True(t, cancelled, "the client sent notifications/cancelled")
	for _, m := range s.received.messages(t) {
		if _, isRequest := m["method"]; !isRequest && string(m["id"]) == string(id) {
			t.Errorf("the cancelled request got a response: %s%s", m["result"], m["error"])
		}
	}
}

// startHeldGoal starts a bridge whose stand-in extension holds tasks.wait
// until ext.waitGate is closed, and returns the environment that points the
// binary at it.
func startHeldGoal(t *testing.T) (ext *standIn, env []string) {
	path := socketPath(t)
	ext = newStandIn()
	ext.waitGate = make(chan struct{})
	startBridge(t, path, ext, nil)
	return ext, bridgeEnv(path, bridgeToken)
}

// assertStopped waits for the stand-in's tasks.stop, of task-1.
func assertStopped(t *testing.T, ext *standIn) {
	t.Helper()
	select {
	case <-ext.stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the task was never stopped")
	}
	assert.JSONEq(t, `{"id":"task-1"}`, string(ext.payload(agentproto.TypeTasksStop)))
}

// TestBridgeCancelStopsTheGoal: the go-sdk client cancels a goal against the
// built binary while its task runs; the server stops the task (tasks.stop
// with its id) and sends no response to the cancelled request, as MCP says
// (before: the task ran on, and a response came).
func TestBridgeCancelStopsTheGoal(t *testing.T) {
	ext, env := startHeldGoal(t)
	defer close(ext.waitGate)
	s, _ := startTapped(t, env)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.ExecuteGoal, Arguments: map[string]any{"goal": "wait"}})
		done <- err
	}()
	select {
	case <-ext.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("tasks.wait never reached the extension")
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assertStopped(t, ext)
	// The session goes on.
	res := call(t, s.cs, tools.BrowserSnapshot, map[string]any{})
	assert.False(t, res.IsError, text(res))
	s.assertNoResponse(t, tools.ExecuteGoal)
}

// httpRawSession is a raw HTTP client's MCP session with agentbridge-mcp --http.
type httpRawSession struct {
	url, session string
	client       *http.Client
}

func (s *httpRawSession) post(t *testing.T, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+httpToken)
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
		// At 2025-11-25 the SDK primes a call's event stream, so that its
		// headers come before the result.
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := s.client.Do(req)
	require.NoError(t, err)
	return resp
}

// TestHTTPCancelStopsTheGoal: a raw HTTP client cancels a goal over
// streamable HTTP while its task runs, keeping the call's POST open; the
// server stops the task (tasks.stop with its id) and the POST's stream ends
// without a response, as MCP says (before: the response came on it).
func TestHTTPCancelStopsTheGoal(t *testing.T) {
	ext, env := startHeldGoal(t)
	defer close(ext.waitGate)
	url, _ := startHTTP(t, env)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	s := &httpRawSession{url: url, client: &http.Client{Transport: tr}}

	resp := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s.session = resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, s.session)
	resp = s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	call := s.post(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tools.ExecuteGoal+`","arguments":{"goal":"wait"}}}`)
	defer call.Body.Close()
	require.Equal(t, http.StatusOK, call.StatusCode)
	require.Equal(t, "text/event-stream", call.Header.Get("Content-Type"))
	stream := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(call.Body); stream <- b }()
	select {
	case <-ext.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("tasks.wait never reached the extension")
	}
	resp = s.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	assertStopped(t, ext)
	var events []byte
	select {
	case events = <-stream:
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call's stream never ended")
	}
	for line := range bytes.Lines(events) {
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if data = bytes.TrimSpace(data); !ok || len(data) == 0 { // the priming event has no data
			continue
		}
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &m), "%s", data)
		if _, isRequest := m["method"]; !isRequest && string(m["id"]) == "7" {
			t.Errorf("the cancelled request got a response: %s", data)
		}
	}

	// The session goes on.
	resp = s.post(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"`+tools.BrowserSnapshot+`","arguments":{}}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `"id":8,"result"`)
}
