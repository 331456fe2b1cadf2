package httpapi_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/agentbridge/agentbridge/internal/sockopt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewServerDefaults(t *testing.T) {
	srv := httpapi.NewServer(http.NotFoundHandler(), nil)
	assert.Equal(t, httpapi.DefaultIdleTimeout, srv.IdleTimeout)
	assert.Equal(t, httpapi.DefaultReadHeaderTimeout, srv.ReadHeaderTimeout)
	// Not net/http's 1 MiB: each of the 64 connections still reading
	// headers could hold that much.
	assert.Equal(t, httpapi.DefaultMaxHeaderBytes, srv.MaxHeaderBytes)
	assert.NotNil(t, srv.ConnState)
	assert.NotNil(t, srv.ConnContext)
	// Not a whole-response WriteTimeout: that would cut event streams
	// and long waits. Each write has its own deadline instead.
	assert.Zero(t, srv.WriteTimeout)
}

// Connections that never send a request are closed oldest first beyond
// the limit; the newest stay, and a real request is served.
func TestNewServerClosesTheOldestIdleConnections(t *testing.T) {
	const limit = 4
	srv := httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), &httpapi.ServerOptions{MaxUnauthConns: limit})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		<-served
	}()

	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range 3 * limit {
		nc, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		conns = append(conns, nc)
	}
	closed := func(nc net.Conn) bool {
		nc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := nc.Read(make([]byte, 1))
		return !errors.Is(err, os.ErrDeadlineExceeded)
	}
	for i, nc := range conns[:2*limit] {
		assert.Eventually(t, func() bool { return closed(nc) }, 5*time.Second, 10*time.Millisecond, "connection %d is closed", i)
	}
	for i, nc := range conns[2*limit:] {
		assert.False(t, closed(nc), "connection %d stays open", 2*limit+i)
	}

	resp, err := http.Get("http://" + l.Addr().String() + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok", string(body))
}

// serveCounting serves srv on a loopback listener and reports each
// connection the server closes on the returned channel.
func serveCounting(t *testing.T, srv *http.Server) (addr string, closed <-chan net.Addr) {
	t.Helper()
	ch := make(chan net.Addr, 1024)
	cs := srv.ConnState
	srv.ConnState = func(nc net.Conn, state http.ConnState) {
		cs(nc, state)
		if state == http.StateClosed {
			ch <- nc.RemoteAddr()
		}
	}
	return serve(t, srv), ch
}

// dialNonReading connects with a small receive buffer and sends request
// n times (pipelined) from a goroutine; it never reads.
func dialNonReading(t *testing.T, addr, request string, n int) net.Conn {
	t.Helper()
	d := net.Dialer{Control: sockopt.ReceiveBuffer(4096)}
	nc, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	go func() {
		for range n {
			if _, err := io.WriteString(nc, request); err != nil {
				return
			}
		}
	}()
	return nc
}

// bigBody is more than the loopback socket buffers hold.
var bigBody = make([]byte, 16<<20)

// bigHandler answers every request with bigBody, marking it authenticated
// when it carries the token, and then reporting it on authed.
func bigHandler(authed chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer t" {
			httpapi.Authenticated(r)
			authed <- struct{}{}
		}
		w.Write(bigBody)
	})
}

// A client that asks and never reads the answer loses its connection once
// a write has waited WriteTimeout: nothing holds it for ever (issue 21
// item 1).
func TestNewServerWritesHaveADeadline(t *testing.T) {
	srv := httpapi.NewServer(bigHandler(nil), &httpapi.ServerOptions{WriteTimeout: 50 * time.Millisecond})
	addr, closed := serveCounting(t, srv)
	nc := dialNonReading(t, addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 1)
	select {
	case a := <-closed:
		assert.Equal(t, nc.LocalAddr().String(), a.String())
	case <-time.After(10 * time.Second):
		t.Fatal("the server still writes to a client that does not read")
	}
}

// Connections answering requests without a token count against
// MaxUnauthConns like idle ones: beyond it the oldest are closed, while a
// connection serving an authenticated request is never one of them (issue
// 21 item 1).
func TestNewServerBoundsActiveUnauthenticatedConnections(t *testing.T) {
	const limit = 4
	authed := make(chan struct{}, 1)
	srv := httpapi.NewServer(bigHandler(authed), &httpapi.ServerOptions{MaxUnauthConns: limit, WriteTimeout: time.Hour})
	addr, closed := serveCounting(t, srv)

	// An agent with the token whose answer is still being written.
	agent := dialNonReading(t, addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\n\r\n", 1)
	<-authed
	var held []net.Conn
	for range 3 * limit {
		held = append(held, dialNonReading(t, addr, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 1))
	}
	gone := map[string]bool{}
	for range 2 * limit {
		select {
		case a := <-closed:
			gone[a.String()] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("%d connections closed, want %d: active unauthenticated connections are not bounded", len(gone), 2*limit)
		}
	}
	assert.False(t, gone[agent.LocalAddr().String()], "the authenticated connection stays")
	for i, nc := range held {
		assert.Equal(t, i < 2*limit, gone[nc.LocalAddr().String()], "connection %d", i)
	}
}
