package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
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

// TestBridgeCancelStopsTheGoal: the go-sdk client cancels a goal against the
// built binary while its task runs; the server stops the task (tasks.stop
// with its id) and sends no response to the cancelled request, as MCP says
// (before: the task ran on, and a response came).
func TestBridgeCancelStopsTheGoal(t *testing.T) {
	path := socketPath(t)
	ext := newStandIn()
	ext.waitGate = make(chan struct{})
	defer close(ext.waitGate)
	startBridge(t, path, ext, nil)
	s, _ := startTapped(t, bridgeEnv(path, bridgeToken))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: agentproto.ToolExecuteGoal, Arguments: map[string]any{"goal": "wait"}})
		done <- err
	}()
	select {
	case <-ext.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("tasks.wait never reached the extension")
	}
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	select {
	case <-ext.stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the task was never stopped")
	}
	assert.JSONEq(t, `{"id":"task-1"}`, string(ext.payload(agentproto.TypeTasksStop)))
	// The session goes on.
	res := call(t, s.cs, agentproto.ToolSnapshot, map[string]any{})
	assert.False(t, res.IsError, text(res))
	s.assertNoResponse(t, agentproto.ToolExecuteGoal)
}
