package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTTPRefusalsDoNotWaitForTheBody: a local process without a token
// sent request headers announcing a body and then nothing. Every answer
// written without reading the body (a refusal, or /health) made net/http
// wait, with no deadline, for the rest of the body before replying, so each
// such connection stayed open for good: a thousand of them used up the
// host's file descriptors and locked out the agent socket. Such answers
// are sent at once and close the connection.
func TestHTTPRefusalsDoNotWaitForTheBody(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "tok"}})
	addr := serve(t, httpapi.NewServer(httpapi.NewHandler(b.Server, nil), nil))
	for _, tc := range []struct {
		name, request string
		status        int
	}{
		{"no token", "POST /v1/tasks HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", http.StatusUnauthorized},
		{"no token, chunked", "POST /v1/tasks HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", http.StatusUnauthorized},
		{"health", "GET /health HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n{", http.StatusOK},
		{"foreign host", "POST /v1/tasks HTTP/1.1\r\nHost: example.com:%s\r\nContent-Length: 100000\r\n\r\n{", http.StatusForbidden},
		{"browser origin", "POST /v1/tasks HTTP/1.1\r\nHost: %s\r\nOrigin: https://evil.example\r\nContent-Length: 100000\r\n\r\n{", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer nc.Close()
			host := addr
			if tc.name == "foreign host" {
				_, host, _ = net.SplitHostPort(addr)
			}
			fmt.Fprintf(nc, tc.request, host)
			// Not a timing goal: on the old code the answer never came.
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(nc)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "the answer must not wait for the body")
			_, err = io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.True(t, resp.Close, "the connection is closed after the answer")
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "the server closed the connection")
		})
	}

	// A request with a token and a whole body is still served, and its
	// connection kept alive.
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	fmt.Fprintf(nc, "POST /v1/tasks/t1/stop HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", addr)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.False(t, resp.Close)
}

// TestNewServerBoundsTheBody: NewServer serves other handlers too
// (the MCP server's), which answered refusals without reading an announced
// body, so that net/http waited for it with no deadline. The body must
// arrive within ReadHeaderTimeout; once it has, a long request is not cut.
func TestNewServerBoundsTheBody(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv := httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow", http.StatusRequestTimeout)
			return
		}
		select {
		case <-time.After(3 * timeout):
			io.WriteString(w, "done")
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
		}
	}), &httpapi.ServerOptions{ReadHeaderTimeout: timeout})
	addr := serve(t, srv)
	send := func(path, body string) (*http.Response, *bufio.Reader) {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		fmt.Fprintf(nc, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n%s", path, addr, body)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second)) // on the old code no answer came
		br := bufio.NewReader(nc)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp, br
	}
	resp, br := send("/refuse", "{")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_, err := br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the connection is closed")

	resp, _ = send("/read", "{")
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "a stalled body fails its read")

	resp, _ = send("/read", strings.Repeat("x", 1000))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a request longer than the timeout, body read, is not cancelled")
}

// TestNewServerBoundsTheHeaders: 100 KB of headers are refused with
// 431 (net/http alone accepts 1 MiB).
func TestNewServerBoundsTheHeaders(t *testing.T) {
	srv := httpapi.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}), nil)
	addr := serve(t, srv)
	for size, want := range map[int]int{1000: http.StatusOK, 100_000: http.StatusRequestHeaderFieldsTooLarge} {
		req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
		require.NoError(t, err)
		req.Header.Set("X-Filler", strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "%d bytes of headers", size)
	}
}

// serve serves srv on a loopback listener until the test ends, then waits
// for every connection to be closed: net/http lingers 500 ms on one it
// refused (closeWriteAndWait), past Close, which goleak would report.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	var opened, closed atomic.Int32
	track := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if track != nil {
			track(c, s)
		}
		switch s {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
		for i := 0; i < 500 && closed.Load() < opened.Load(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	return l.Addr().String()
}
