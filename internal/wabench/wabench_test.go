package wabench

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/syncbuf"
)

// TestSite: the bench batch runs its three actions as the Node bench site
// does, and the floor answers with the same bytes.
func TestSite(t *testing.T) {
	const origin = "http://127.0.0.1:8765"
	h, err := Site(origin, nil)
	require.NoError(t, err)
	defer h.Close()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, NewRequest(t.Context(), origin, ""))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"ok":true,"protocol":"webagents/0.1","pacing":{"minIntervalMs":0,"maxConcurrency":2},"results":{
		"find":{"results":[{"id":"kb-1","name":"Wireless Keyboard","price":49.99,"category":"peripherals"}]},
		"product":{"product":{"id":"kb-1","name":"Wireless Keyboard","price":49.99,"category":"peripherals"}},
		"highlight":{"ok":true,"highlightId":"kb-1"}}}`, rec.Body.String())

	floor, err := Floor(origin, h)
	require.NoError(t, err)
	frec := httptest.NewRecorder()
	floor.ServeHTTP(frec, NewRequest(t.Context(), origin, ""))
	assert.Equal(t, rec.Body.String(), frec.Body.String())

	keyed := httptest.NewRecorder()
	h.ServeHTTP(keyed, NewRequest(t.Context(), origin, NewKeys().Next()))
	assert.Equal(t, http.StatusOK, keyed.Code)
}

// TestServe: the server process's protocol, in this process.
func TestServe(t *testing.T) {
	inR, inW := io.Pipe()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- Serve(TargetFloor, nil, inR, &out) }()
	_, err := inW.Write([]byte("cpu\n"))
	require.NoError(t, err)
	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], "listening 127.0.0.1:"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "cpu "), lines[1])
	assert.Error(t, Serve("nonsense", nil, bytes.NewReader(nil), &out))
}
