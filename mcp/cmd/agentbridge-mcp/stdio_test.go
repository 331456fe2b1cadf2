package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawSession is agentbridge-mcp spoken to line by line, without an MCP
// client: what a buggy or hostile client can send.
type rawSession struct {
	t     *testing.T
	stdin io.WriteCloser
	out   <-chan string
	exit  chan struct{} // closed when the process has exited
	err   error         // its exit status, once exit is closed
	all   []string      // every stdout line read
}

func startRaw(t *testing.T, env []string, args ...string) (*rawSession, *syncBuffer) {
	t.Helper()
	cmd, stderr := command(t, env, args...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &rawSession{t: t, stdin: stdin, out: lines(stdout), exit: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exit)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-s.exit:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return s, stderr
}

func (s *rawSession) send(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.stdin, line+"\n")
	require.NoError(s.t, err)
}

// next returns the next stdout line, decoded.
func (s *rawSession) next() map[string]any {
	s.t.Helper()
	select {
	case line, ok := <-s.out:
		require.True(s.t, ok, "stdout closed")
		s.all = append(s.all, line)
		if strings.HasPrefix(line, "[") { // a batch's responses
			var batch []any
			require.NoError(s.t, json.Unmarshal([]byte(line), &batch), "stdout line is not JSON: %q", line)
			return map[string]any{"batch": batch}
		}
		var m map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(line), &m), "stdout line is not JSON: %q", line)
		return m
	case <-time.After(30 * time.Second):
		s.t.Fatal("no reply")
		return nil
	}
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestStdioBadInput(t *testing.T) {
	s, _ := startRaw(t, nil)
	s.send(strings.Replace(initLine, "%s", "2025-06-18", 1))
	init := s.next()
	assert.Equal(t, "2025-06-18", init["result"].(map[string]any)["protocolVersion"], "the client's version when supported")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	cases := []struct {
		line    string
		code    float64
		message string
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700, "Parse error"},
		{`not json at all`, -32700, "Parse error"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list"} trailing`, -32700, "Parse error"},
		{`42`, -32600, "Invalid Request"},
		{`{"hello":"world"}`, -32600, "Invalid Request"},
		{`[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, -32600, "Invalid Request: JSON-RPC batches are not supported"},
	}
	for _, c := range cases {
		s.send(c.line)
		reply := s.next()
		assert.Equal(t, "2.0", reply["jsonrpc"])
		id, present := reply["id"]
		assert.True(t, present, "id is present (null)")
		assert.Nil(t, id, c.line)
		e, _ := reply["error"].(map[string]any)
		require.NotNil(t, e, "%q: %v", c.line, reply)
		assert.Equal(t, c.code, e["code"], c.line)
		assert.Equal(t, c.message, e["message"], c.line)
	}
	s.send("")
	s.send("   ")

	// The session goes on.
	s.send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	reply := s.next()
	assert.Equal(t, float64(5), reply["id"])
	tools := reply["result"].(map[string]any)["tools"].([]any)
	assert.NotEmpty(t, tools)

	// A tool call for a missing bridge is a tool error, not a protocol one.
	s.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"browser_snapshot","arguments":{}}}`)
	reply = s.next()
	assert.Equal(t, true, reply["result"].(map[string]any)["isError"])

	// stdin EOF ends the server, with exit status 0.
	require.NoError(t, s.stdin.Close())
	select {
	case <-s.exit:
		assert.NoError(t, s.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit at the end of stdin")
	}
}

func TestStdioProtocolVersion(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		s, _ := startRaw(t, nil)
		s.send(strings.Replace(initLine, "%s", v, 1))
		assert.Equal(t, v, s.next()["result"].(map[string]any)["protocolVersion"])
	}
}

// TestStdoutOnlyMCP: with every source on and logging busy (hub token,
// discovery warnings), standard output carries nothing but JSON-RPC
// messages, and the logs are on standard error.
func TestStdoutOnlyMCP(t *testing.T) {
	invalid := startInvalidSite(t)
	s, stderr := startRaw(t, nil, "--bridge", "--hub", "127.0.0.1:0", "--site", invalid, "-v")
	s.send(strings.Replace(initLine, "%s", "2025-06-18", 1))
	s.next()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	s.next()
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hub_tabs","arguments":{}}}`)
	s.next()
	s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"browser_snapshot","arguments":{}}}`)
	s.next()
	require.NoError(t, s.stdin.Close())
	for line := range s.out {
		s.all = append(s.all, line)
	}
	<-s.exit
	for _, line := range s.all {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(line), &m), "stdout line %q", line)
		assert.JSONEq(t, `"2.0"`, string(m["jsonrpc"]), line)
	}
	assert.Len(t, s.all, 4)
	logs := stderr.String()
	assert.Contains(t, logs, "extension hub token")
	assert.Contains(t, logs, "webagents site has no tools")
}

// TestStdioBatches: at 2025-03-26, whose servers must accept JSON-RPC
// batches, a batch's requests are answered together in one array (its
// notifications and a cancelled request get nothing, an invalid element an
// error in place); at 2025-06-18 a batch is refused.
func TestStdioBatches(t *testing.T) {
	s, _ := startRaw(t, nil)
	// The initialize request itself may come in a batch.
	s.send("[" + strings.Replace(initLine, "%s", "2025-03-26", 1) + "]")
	init := s.next()
	require.IsType(t, []any{}, init["batch"], "%v", s.all)
	s.send(`[{"jsonrpc":"2.0","method":"notifications/initialized"},` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"},42,{"jsonrpc":"2.0","id":"p","method":"ping"},` +
		`{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"no/such/method"}]`)
	batch := s.next()["batch"].([]any)
	require.Len(t, batch, 5, "%v", s.all)
	assert.Equal(t, float64(2), batch[0].(map[string]any)["id"])
	assert.NotEmpty(t, batch[0].(map[string]any)["result"].(map[string]any)["tools"])
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": float64(-32600), "message": "Invalid Request"}}, batch[1])
	assert.Equal(t, map[string]any{"jsonrpc": "2.0", "id": "p", "result": map[string]any{}}, batch[2])
	assert.Equal(t, float64(-32600), batch[3].(map[string]any)["error"].(map[string]any)["code"], "a duplicate id")
	assert.Equal(t, float64(9), batch[4].(map[string]any)["id"])
	assert.Equal(t, float64(-32601), batch[4].(map[string]any)["error"].(map[string]any)["code"])

	// Notifications alone get no answer; an empty batch gets one error.
	s.send(`[{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}]`)
	s.send(`[]`)
	assert.Equal(t, "Invalid Request: empty batch", s.next()["error"].(map[string]any)["message"])
	s.send(`[` + strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/initialized"},`, 100) + `1]`)
	assert.Equal(t, "Invalid Request: batch too long", s.next()["error"].(map[string]any)["message"])

	// Single messages go on as before.
	s.send(`{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	assert.Equal(t, float64(10), s.next()["id"])

	// At 2026-07-28, which has no initialize, the discovery names the
	// protocol, and batches are refused.
	s3, _ := startRaw(t, nil)
	s3.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	require.NotNil(t, s3.next()["result"], "%v", s3.all)
	s3.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	reply := s3.next()
	e, _ := reply["error"].(map[string]any)
	require.NotNil(t, e, "a batch at 2026-07-28 is refused: %v", reply)
	assert.Equal(t, "Invalid Request: JSON-RPC batches are not supported", e["message"])

	// At 2025-06-18 batches are refused, as the protocol says.
	s2, _ := startRaw(t, nil)
	s2.send(strings.Replace(initLine, "%s", "2025-06-18", 1))
	s2.next()
	s2.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	assert.Equal(t, "Invalid Request: JSON-RPC batches are not supported", s2.next()["error"].(map[string]any)["message"])
}
