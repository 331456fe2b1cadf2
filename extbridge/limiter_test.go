package extbridge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/internal/sockopt"
)

// getKeepAlive sends one keep-alive request on c and reads its response,
// leaving the connection idle.
func getKeepAlive(t testing.TB, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_, err := io.WriteString(c, "GET /artifacts/a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// 1,000 idle keep-alive connections from a local process without a token
// cost the hub at most MaxUnauthConns descriptors, and the extension still
// connects and a command round-trips.
func TestIdleConnectionsCannotLockOutExtension(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644))
	e := newTCPEnv(t, HubOptions{ArtifactsDir: dir})
	addr := e.url[len("ws://") : len(e.url)-len("/ws")]

	const idle = 1000
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idle {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
		getKeepAlive(t, c, bufio.NewReader(c))
	}
	assert.LessOrEqual(t, e.hub.unauth.len(), DefaultMaxUnauthConns)

	e.dial(t, extbridgetest.Options{Browser: extbridgetest.NewBrowser()})
	res, err := e.hub.Navigate(t.Context(), "https://shop.example/")
	require.NoError(t, err)
	assert.Equal(t, "https://shop.example/", res.URL)

	// The hub closed all but the newest connections: the ones still open
	// block until the deadline, the others read EOF.
	deadline := time.Now().Add(300 * time.Millisecond)
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(deadline)
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	assert.LessOrEqual(t, open, DefaultMaxUnauthConns)
	assert.True(t, e.hub.Connected(), "the extension's connection is never evicted")

	// More idle connections after it authenticated do not evict it.
	for range 2 * DefaultMaxUnauthConns {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	_, err = e.hub.Navigate(t.Context(), "https://shop.example/2")
	require.NoError(t, err)
}

// An HTTP connection idle for IdleTimeout is closed.
func TestIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644))
		e := newEnv(t, HubOptions{ArtifactsDir: dir})
		c, err := e.ln.Dial(t.Context())
		require.NoError(t, err)
		defer c.Close()
		getKeepAlive(t, c, bufio.NewReader(c))
		start := time.Now()
		_, err = c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF)
		assert.Equal(t, DefaultIdleTimeout, time.Since(start))
	})
}

// Pre-hello WebSockets count as unauthenticated: the oldest is evicted
// when the set is full, and the extension's hello gets through.
func TestUnauthCapEvictsPendingHandshakes(t *testing.T) {
	e := newTCPEnv(t, HubOptions{MaxUnauthConns: 4})
	raws := 0
	for range 10 {
		ws, _, err := extbridgetest.DialRaw(t.Context(), e.url, &extbridgetest.Options{Token: testToken})
		if err == nil {
			defer ws.CloseNow()
			raws++
		}
	}
	assert.Equal(t, 10, raws, "every upgrade is accepted")
	assert.LessOrEqual(t, e.hub.unauth.len(), 4)
	e.dial(t, extbridgetest.Options{Browser: extbridgetest.NewBrowser()})
	_, err := e.hub.Tabs(t.Context())
	require.NoError(t, err)
}

// A local process that asks for an artifact (no token needed) and never
// reads the answer loses its connection once a write has waited
// WriteTimeout, instead of holding it and its goroutine for ever (issue 21
// item 1).
func TestArtifactWritesHaveADeadline(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 16<<20), 0o644))
	e := newTCPEnv(t, HubOptions{ArtifactsDir: dir, WriteTimeout: 50 * time.Millisecond})
	addr := e.url[len("ws://") : len(e.url)-len("/ws")]
	d := net.Dialer{Control: sockopt.ReceiveBuffer(4096)}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /artifacts/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return e.hub.unauth.len() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the hub still writes to a client that does not read")
}
