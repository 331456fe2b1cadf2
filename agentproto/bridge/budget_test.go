//go:build unix

package bridge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/agentbridge/agentbridge/internal/sockopt"
	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Clients on the socket that authenticate and then never read cannot grow
// the host without bound: the bytes waiting for all clients together stay
// under MaxTotalQueuedBytes, the clients that never read are disconnected
// with a log line saying why, and an agent that reads receives every event
// and is still answered (issue 21 item 2).
func TestNonReadingClientsStayWithinTheTotalBudget(t *testing.T) {
	const budget = 2 << 20
	logs := &syncbuf.Buffer{}
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{
		Token:               "t",
		MaxTotalQueuedBytes: budget,
		Logger:              slog.New(slog.NewTextHandler(logs, nil)),
	}})
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	go b.Server.Serve(l)

	const stuck = 4
	var conns []net.Conn
	for range stuck {
		nc, err := net.Dial("unix", path)
		require.NoError(t, err)
		defer nc.Close()
		require.NoError(t, nc.(*net.UnixConn).SetReadBuffer(4096))
		require.NoError(t, nativemsg.NewWriter(nc, nil).WriteMessage([]byte(`{"id":1,"type":"bridge.health","token":"t"}`)))
		conns = append(conns, nc)
	}
	agent, err := agentproto.Dial(t.Context(), path, &agentproto.ClientOptions{Token: "t"})
	require.NoError(t, err)
	defer agent.Close()
	sub := agent.Subscribe(&agentproto.SubscribeOptions{Buffer: 1000})
	_, err = agent.Health(t.Context())
	require.NoError(t, err)

	event := json.RawMessage(`{"kind":"task:error","error":"` + strings.Repeat("e", 64<<10) + `"}`)
	var most int64
	for i := range 200 { // 13 MB: more than the budget, many times over
		require.NoError(t, b.Server.Publish(event))
		most = max(most, bridge.QueuedBytes(b.Server))
		select {
		case <-sub.Events():
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not reach the agent that reads", i)
		}
	}
	assert.LessOrEqual(t, most, int64(budget+len(event)+64), "the bytes waiting stay within the budget")
	_, err = agent.Health(t.Context())
	assert.NoError(t, err, "the agent that reads is still answered")
	assert.Equal(t, stuck, strings.Count(logs.String(), "disconnecting the slowest client"), "each client that does not read is dropped, and the log says why:\n%s", logs)

	// Their connections end: after what was written before, the stream
	// stops.
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		var rest bytes.Buffer
		_, err := rest.ReadFrom(nc)
		assert.NotErrorIs(t, err, syscall.ETIMEDOUT, "connection %d is closed", i)
		assert.Less(t, rest.Len(), 200*len(event), "connection %d did not get every event", i)
	}
}

// Event streams of the HTTP API count the bytes of their events under the
// same budget: streams that never read are ended (the log says why) while
// the bytes waiting stay within it, and a stream that reads gets every
// event (issue 21 item 2).
func TestNonReadingEventStreamsStayWithinTheTotalBudget(t *testing.T) {
	const budget = 2 << 20
	logs := &syncbuf.Buffer{}
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{
		MaxTotalQueuedBytes: budget,
		Logger:              slog.New(slog.NewTextHandler(logs, nil)),
	}})
	srv := httptest.NewServer(httpapi.NewHandler(b.Server, nil))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	const stuck = 4
	d := net.Dialer{Control: sockopt.ReceiveBuffer(4096)}
	for range stuck {
		nc, err := d.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_, err = io.WriteString(nc, "GET /v1/tasks/t1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		require.NoError(t, err)
		// The stream has subscribed once it writes; from then on this
		// client reads nothing.
		_, err = nc.Read(make([]byte, 1))
		require.NoError(t, err)
	}
	resp, err := http.Get(srv.URL + "/v1/tasks/t1/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	got := make(chan struct{}, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if sc.Text() == "event: task.error" {
				got <- struct{}{}
			}
		}
	}()

	event := json.RawMessage(`{"kind":"task:error","taskId":"t1","error":"` + strings.Repeat("e", 64<<10) + `"}`)
	var most int64
	for i := range 200 { // 13 MB per stream
		require.NoError(t, b.Server.Publish(event))
		most = max(most, bridge.QueuedBytes(b.Server))
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not reach the stream that reads", i)
		}
	}
	assert.LessOrEqual(t, most, int64(budget+len(event)), "the bytes waiting stay within the budget")
	assert.Equal(t, stuck, strings.Count(logs.String(), "disconnecting the slowest client"), "each stream that does not read is ended, and the log says why:\n%s", logs)
}
