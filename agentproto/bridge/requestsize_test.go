package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unixServer serves an echoing server on a real Unix socket and counts
// the requests that reach its extension.
func unixServer(t *testing.T) (path string, forwarded *atomic.Int64) {
	t.Helper()
	requireUnixSockets(t)
	path = filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	forwarded = new(atomic.Int64)
	srv := bridge.NewServer(&bridge.ServerOptions{
		AllowUnauthenticated: true,
		Extension: bridge.ExtensionFunc(func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error) {
			forwarded.Add(1)
			return json.RawMessage(`true`), nil
		}),
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return path, forwarded
}

// bigPayload is a payload of more than size bytes.
func bigPayload(size int) json.RawMessage {
	return json.RawMessage(`{"text":"` + strings.Repeat("x", size) + `"}`)
}

// A client whose own limit is above the server's still learns why its
// request failed: the server reads the frame away, answers, and only then
// closes (issue 11 item 7: it used to see "connection reset by peer").
func TestOversizedRequestErrorReachesTheClient(t *testing.T) {
	path, forwarded := unixServer(t)
	c, err := agentproto.Dial(t.Context(), path, &agentproto.ClientOptions{MaxRequestSize: 8 << 20})
	require.NoError(t, err)
	defer c.Close()
	payload := bigPayload(4_300_000)
	err = c.Call(t.Context(), agentproto.TypeText, payload, nil)
	var re *agentproto.RemoteError
	require.ErrorAs(t, err, &re, "got %v", err)
	size := len(`{"id":"1","type":"browser.type","payload":`) + len(payload) + len(`}`)
	assert.Equal(t, fmt.Sprintf("Request frame of %d bytes exceeds the limit of 4194304 bytes", size), re.Message)
	assert.ErrorIs(t, err, agentproto.ErrRequestFrameTooLarge)
	assert.Zero(t, forwarded.Load())
}

// With the default limit, the client refuses the request itself, with
// the server's message, writes nothing, and the connection stays usable.
func TestClientRefusesOversizedRequestBeforeWriting(t *testing.T) {
	path, forwarded := unixServer(t)
	c, err := agentproto.Dial(t.Context(), path, nil)
	require.NoError(t, err)
	defer c.Close()
	payload := bigPayload(4_300_000)
	err = c.Call(t.Context(), agentproto.TypeText, payload, nil)
	var se *agentproto.RequestSizeError
	require.ErrorAs(t, err, &se)
	size := len(`{"id":"1","type":"browser.type","payload":`) + len(payload) + len(`}`)
	assert.Equal(t, agentproto.RequestSizeError{Size: size, Limit: agentproto.DefaultMaxRequestSize}, *se)
	assert.Equal(t, fmt.Sprintf("Request frame of %d bytes exceeds the limit of 4194304 bytes", size), err.Error())
	assert.ErrorIs(t, err, agentproto.ErrRequestFrameTooLarge)
	assert.False(t, errors.Is(err, agentproto.ErrClosed))

	var ok bool
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, nil, &ok), "the connection is still up")
	assert.True(t, ok)
	assert.Equal(t, int64(1), forwarded.Load(), "only the small request reached the server")
}

// The server reads an oversized frame away before it closes, so a client
// that writes its whole request before reading (as simple clients do)
// completes the write and then reads the answer, instead of failing with
// a broken pipe.
func TestServerDrainsOversizedFrameBeforeClosing(t *testing.T) {
	path, _ := unixServer(t)
	nc, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer nc.Close()
	conn := nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{ReadLimit: 1 << 20, WriteLimit: 8 << 20})
	frame := `{"id":"big","type":"browser.type","payload":` + string(bigPayload(4_300_000)) + `}`
	require.NoError(t, conn.WriteMessage([]byte(frame)), "the whole frame is written")
	got, err := conn.ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"error":"Request frame of %d bytes exceeds the limit of 4194304 bytes"}`, len(frame)), string(got))
	_, err = conn.ReadMessage(nil)
	assert.ErrorIs(t, err, io.EOF, "then the server closes")
}
