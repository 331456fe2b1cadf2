package webagents

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandlerDoesNotWaitForeverForTheBody: the Handler read the body with
// no time limit, and answered refusals without reading it, which makes
// net/http wait for the rest of the body, with no deadline, before and
// after replying. A client announcing a body and sending a byte of it held
// a connection, a goroutine and a file descriptor for good on any server
// without a ReadTimeout (the example shop has none). The body must arrive
// within the batch deadline, and a refusal closes the connection at once.
func TestHandlerDoesNotWaitForeverForTheBody(t *testing.T) {
	m := manifestWith(t, "", `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{
		"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return "ok", nil })}, &HandlerOptions{Deadline: 200 * time.Millisecond})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	for _, tc := range []struct {
		name, headers string
		status        int
	}{
		{"stalled body", "Content-Type: application/json\r\nContent-Length: 1000\r\n", http.StatusBadRequest},
		{"stalled chunked body", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", http.StatusBadRequest},
		{"refused media type", "Content-Type: text/plain\r\nContent-Length: 100000\r\n", http.StatusUnsupportedMediaType},
		{"refused origin", "Content-Type: application/json\r\nOrigin: https://evil.example\r\nContent-Length: 100000\r\n", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer nc.Close()
			first := "{"
			if strings.Contains(tc.headers, "chunked") {
				first = "1\r\n{\r\n"
			}
			fmt.Fprintf(nc, "POST /api/agent/workflow HTTP/1.1\r\nHost: %s\r\n%s\r\n%s", addr, tc.headers, first)
			// Not a timing goal: on the old code no answer ever came.
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(nc)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "an answer must come without the rest of the body")
			_, err = io.ReadAll(resp.Body)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.True(t, resp.Close)
			_, err = br.ReadByte()
			assert.ErrorIs(t, err, io.EOF, "the server closed the connection")
		})
	}

	// A whole batch is served on a kept-alive connection, twice.
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	br := bufio.NewReader(nc)
	body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
	for range 2 {
		fmt.Fprintf(nc, "POST /api/agent/workflow HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.False(t, resp.Close)
	}
}
