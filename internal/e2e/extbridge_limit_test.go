package e2e

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extension"
)

// A read whose result is larger than the hub's ReadLimit fails with the
// typed error (not "closed by the extension"), and the real extension's
// reconnect is accepted.
func TestExtensionBridgeReadOverLimitInChromium(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	const limit = 64 << 10
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/big" {
			w.Write([]byte("<!doctype html><title>Big</title><p>" + strings.Repeat("lorem ipsum ", 4*limit/12) + "</p>"))
			return
		}
		w.Write([]byte("<!doctype html><title>Small</title><h1>small page</h1>"))
	}))
	t.Cleanup(site.Close)
	token := newToken(t)
	connected := make(chan extbridge.ConnInfo, 4)
	disconnected := make(chan error, 4)
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{
		ReadLimit:    limit,
		OnConnect:    func(ci extbridge.ConnInfo) { connected <- ci },
		OnDisconnect: func(_ extbridge.ConnInfo, err error) { disconnected <- err },
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	t.Cleanup(func() {
		hub.Close()
		assert.ErrorIs(t, <-served, extbridge.ErrServerClosed)
	})

	browsertest.Start(t, &browsertest.Options{Extension: &extension.Options{
		DisableNative: true,
		HubPort:       l.Addr().(*net.TCPAddr).Port,
		HubToken:      token,
		HubBackoffMin: 100 * time.Millisecond,
		HubBackoffMax: 500 * time.Millisecond,
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	waitFor := func(what string) {
		t.Helper()
		select {
		case <-connected:
		case <-ctx.Done():
			require.FailNow(t, what)
		}
	}
	waitFor("the extension never connected")

	_, err = hub.Navigate(ctx, site.URL+"/big")
	require.NoError(t, err)
	_, err = hub.Read(ctx, "")
	require.Error(t, err)
	assert.ErrorIs(t, err, extbridge.ErrFrameTooLarge)
	assert.ErrorIs(t, err, extbridge.ErrDisconnected)
	var tooLarge *extbridge.FrameTooLargeError
	require.True(t, errors.As(err, &tooLarge), "%v", err)
	assert.EqualValues(t, limit, tooLarge.Limit)
	select {
	case derr := <-disconnected:
		assert.ErrorIs(t, derr, extbridge.ErrFrameTooLarge)
	case <-ctx.Done():
		require.FailNow(t, "no OnDisconnect")
	}

	waitFor("the extension did not reconnect after the oversized frame")
	_, err = hub.Navigate(ctx, site.URL+"/small")
	require.NoError(t, err)
	res, err := hub.Read(ctx, "h1")
	require.NoError(t, err)
	assert.Equal(t, "small page", res.Content)
}
