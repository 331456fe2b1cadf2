package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
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

	cmd, stderr := command(t, bridgeEnv(path, bridgeToken))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var sent, received wire
	clientIn := received.tap(stdout)
	pr, pw := io.Pipe()
	go func() { _, _ = io.Copy(stdin, sent.tap(pr)); stdin.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: io.NopCloser(clientIn), Writer: pw}, nil)
	require.NoError(t, err, "stderr:\n%s", stderr)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: agentproto.ToolExecuteGoal, Arguments: map[string]any{"goal": "wait"}})
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
	// The session goes on; then it ends, and the server exits: everything it
	// wrote has been recorded.
	res := call(t, cs, agentproto.ToolSnapshot, map[string]any{})
	assert.False(t, res.IsError, text(res))
	require.NoError(t, cs.Close())
	<-received.ended
	require.NoError(t, cmd.Wait())

	var goalID json.RawMessage
	for _, m := range sent.messages(t) {
		if string(m["method"]) == `"tools/call"` && bytes.Contains(m["params"], []byte(agentproto.ToolExecuteGoal)) {
			goalID = m["id"]
		}
	}
	require.NotNil(t, goalID, "the goal's request")
	cancelled := false
	for _, m := range sent.messages(t) {
		cancelled = cancelled || (string(m["method"]) == `"notifications/cancelled"` && bytes.Contains(m["params"], goalID))
	}
	assert.True(t, cancelled, "the client sent notifications/cancelled")
	for _, m := range received.messages(t) {
		if _, isResponse := m["method"]; !isResponse && string(m["id"]) == string(goalID) {
			t.Errorf("the cancelled request got a response: %s%s", m["result"], m["error"])
		}
	}
}
