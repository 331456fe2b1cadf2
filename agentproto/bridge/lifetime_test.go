package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hunt frame buffers released while still in use. TestMain
// turns on wire's debug checks: a released buffer is overwritten with
// garbage at once and retaining it panics, so a buffer given back too
// early shows in the bytes compared, or as a crash.

// A request whose timeout is over before the host has forwarded it: the
// timeout's reply releases the request's frame while the host is still
// reading its payload to write it to the extension.
func TestTimeoutRacingForward(t *testing.T) {
	b := newBridge(t, nil)
	a := dialRaw(t, b)
	const n = 1000
	type reply struct {
		ID     int
		Result json.RawMessage
		Error  string
	}
	replies := make(chan reply, n)
	go func() {
		for range n {
			body, err := a.conn.ReadMessage(nil)
			if err != nil {
				break
			}
			var r reply
			json.Unmarshal(body, &r)
			replies <- r
		}
		close(replies)
	}()
	payload := func(i int) string {
		return fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("p", (i*997)%(40<<10)))
	}
	for i := range n {
		// 1e-6 ms: a timer of one nanosecond, over before the request
		// reaches the host.
		require.NoError(t, a.conn.WriteMessage(fmt.Appendf(nil,
			`{"id":%d,"type":"browser.click","payload":%s,"timeoutMs":1e-6}`, i, payload(i))))
	}
	got := 0
	for r := range replies {
		got++
		if r.Error != "" {
			assert.Equal(t, "Bridge request timed out: browser.click", r.Error)
			continue
		}
		assert.Equal(t, payload(r.ID), string(r.Result), "request %d", r.ID)
	}
	assert.Equal(t, n, got)
}

// An ExtensionFunc still reading its payload after the request timed out.
func TestExtensionFuncPayloadOutlivesTimeout(t *testing.T) {
	const n = 50
	answered := make(chan struct{}, n)
	var damaged atomic.Int32
	srv := bridge.NewServer(&bridge.ServerOptions{AllowUnauthenticated: true,
		Extension: bridge.ExtensionFunc(func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done() // timed out
			<-answered   // and the agent has the timeout's answer
			var p struct{ Pad string }
			if err := json.Unmarshal(payload, &p); err != nil || strings.Trim(p.Pad, "q") != "" {
				damaged.Add(1)
			}
			return nil, ctx.Err()
		})})
	nc := serveInMemory(t, srv)
	a := &rawAgent{conn: nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{ReadLimit: 1 << 26, WriteLimit: 1 << 26})}
	go func() {
		for i := range n {
			a.conn.WriteMessage(fmt.Appendf(nil, `{"id":%d,"type":"browser.click","payload":{"pad":%q},"timeoutMs":1}`,
				i, strings.Repeat("q", 100+i*1000)))
		}
	}()
	for range n {
		assert.Contains(t, a.recv(t), `"error":"Bridge request timed out: browser.click"`)
		answered <- struct{}{}
	}
	srv.Close() // waits for the functions
	assert.Zero(t, damaged.Load(), "payloads overwritten while the functions read them")
}

// A client that half-closes right after its response, as the reference
// agent-client does: the server ends that connection cleanly (whole frames,
// then end of stream), and events to it, written or dropped, hurt nobody.
func TestHalfClosedClient(t *testing.T) {
	requireUnixSockets(t)
	b := newBridge(t, nil)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.Server.Serve(l) }()
	defer func() { b.Server.Close(); <-served }()

	other, err := agentproto.Dial(t.Context(), path, nil)
	require.NoError(t, err)
	defer other.Close()
	sub := other.Subscribe(nil)
	_, err = other.Health(t.Context())
	require.NoError(t, err)

	nc, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer nc.Close()
	half := nativemsg.NewConn(nc, nc, nil, &nativemsg.ConnOptions{ReadLimit: 1 << 26})
	require.NoError(t, half.WriteMessage([]byte(`{"id":1,"type":"bridge.health"}`)))
	reply, err := half.ReadMessage(nil)
	require.NoError(t, err)
	assert.Contains(t, string(reply), `"id":1,"result":{"ok":true`)
	require.NoError(t, nc.(*net.UnixConn).CloseWrite())

	for i := range 20 {
		event := fmt.Sprintf(`{"kind":"task:update","task":{"id":"t%d","pad":%q}}`, i, strings.Repeat("p", i*4000))
		require.NoError(t, b.Extension.Emit(json.RawMessage(event)))
		e := <-sub.Events()
		assert.JSONEq(t, event, string(e.Raw), "the others get every event")
	}
	for {
		_, err := half.ReadMessage(nil)
		if err != nil {
			assert.ErrorIs(t, err, io.EOF, "the server ends the connection between frames")
			break
		}
	}
	h, err := other.Health(t.Context())
	require.NoError(t, err)
	assert.True(t, h.ExtensionOnline())
}

// While Shutdown drains, new requests are refused with MsgShuttingDown on
// open connections, the one in flight is answered, and Serve then
// returns bridge.ErrServerClosed.
func TestShutdownRefusesNewRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		l := agentprototest.NewListener()
		served := make(chan error, 1)
		go func() { served <- b.Server.Serve(l) }()
		nc, err := l.Dial(t.Context())
		require.NoError(t, err)
		c := agentproto.NewClient(nc, nil)
		defer c.Close()
		pending := make(chan error, 1)
		go func() { pending <- c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil) }()
		req := <-b.Extension.Requests()

		shut := make(chan error, 1)
		go func() { shut <- b.Server.Shutdown(t.Context()) }()
		synctest.Wait()
		assert.ErrorIs(t, <-served, bridge.ErrServerClosed, "Serve returns at once")
		err = c.Call(t.Context(), agentproto.TypeClick, nil, nil)
		assert.Equal(t, &agentproto.RemoteError{Message: "Bridge is shutting down"}, err)
		select {
		case <-shut:
			t.Fatal("Shutdown returned with a request in flight")
		default:
		}
		require.NoError(t, req.Reply(json.RawMessage(`{}`)))
		assert.NoError(t, <-pending)
		assert.NoError(t, <-shut)
		assert.ErrorIs(t, c.Call(t.Context(), agentproto.TypeHealth, nil, nil), agentproto.ErrClosed, "connections closed after the drain")
	})
}

func TestHostWaitOnline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hostEnd, browserEnd := nativemsg.Pipe()
		h := bridge.NewHost(hostEnd, nil)
		ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{NoHello: true})
		defer ext.Close()
		runDone := make(chan error, 1)
		go func() { runDone <- h.Run(t.Context()) }()

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := h.WaitOnline(ctx)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "no hello yet")

		waited := make(chan error, 1)
		go func() { waited <- h.WaitOnline(t.Context()) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("WaitOnline returned %v before the hello", err)
		default:
		}
		require.NoError(t, ext.Hello())
		assert.NoError(t, <-waited)
		assert.True(t, h.Online())
		assert.NoError(t, h.WaitOnline(t.Context()), "online: at once")

		require.NoError(t, h.Close())
		<-runDone
		assert.ErrorIs(t, h.WaitOnline(t.Context()), agentproto.ErrStreamClosed, "the link has ended")
	})
}

func TestHostWaitOnlineEndsWithTheLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hostEnd, browserEnd := nativemsg.Pipe()
		h := bridge.NewHost(hostEnd, nil)
		ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{NoHello: true})
		go h.Run(t.Context())
		waited := make(chan error, 1)
		go func() { waited <- h.WaitOnline(t.Context()) }()
		synctest.Wait()
		ext.Vanish()
		assert.ErrorIs(t, <-waited, agentproto.ErrStreamClosed, "an extension that never said hello")
		ext.Close()
	})
}
