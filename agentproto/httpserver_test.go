package agentproto_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewHTTPServerDefaults(t *testing.T) {
	srv := agentproto.NewHTTPServer(http.NotFoundHandler(), nil)
	assert.Equal(t, agentproto.DefaultHTTPIdleTimeout, srv.IdleTimeout)
	assert.Equal(t, agentproto.DefaultHTTPReadHeaderTimeout, srv.ReadHeaderTimeout)
	// Not net/http's 1 MiB: each of the 64 connections still reading
	// headers could hold that much.
	assert.Equal(t, agentproto.DefaultHTTPMaxHeaderBytes, srv.MaxHeaderBytes)
	assert.NotNil(t, srv.ConnState)
}

// Connections that never send a request are closed oldest first beyond
// the limit; the newest stay, and a real request is served.
func TestNewHTTPServerClosesTheOldestIdleConnections(t *testing.T) {
	const limit = 4
	srv := agentproto.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), &agentproto.HTTPServerOptions{MaxIdleConns: limit})
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
