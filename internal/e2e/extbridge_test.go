package e2e

import (
	"bytes"
	"context"
	"image/png"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extension"
)

// startHub serves a hub on addr ("127.0.0.1:0" for any port) until the
// test ends or stop is called.
func startHub(t *testing.T, addr, token string, connected chan<- extbridge.ConnInfo) (hub *extbridge.Hub, port int, stop func()) {
	t.Helper()
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{
		OnConnect: func(ci extbridge.ConnInfo) {
			if connected != nil {
				connected <- ci
			}
		},
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- hub.Serve(l) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			hub.Close()
			assert.ErrorIs(t, <-done, extbridge.ErrServerClosed)
		})
	}
	t.Cleanup(stop)
	return hub, l.Addr().(*net.TCPAddr).Port, stop
}

func TestExtensionBridgeInChromium(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	site := servePages(t)
	token := newToken(t)
	connected := make(chan extbridge.ConnInfo, 4)
	hub, port, stopHub := startHub(t, "127.0.0.1:0", token, connected)

	browsertest.Start(t, &browsertest.Options{Extension: &extension.Options{
		DisableNative: true,
		HubPort:       port,
		HubToken:      token,
		HubBackoffMin: 100 * time.Millisecond,
		HubBackoffMax: 500 * time.Millisecond,
		Approvals:     extension.ApprovalApprove,
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	var info extbridge.ConnInfo
	select {
	case info = <-connected:
	case <-ctx.Done():
		require.FailNow(t, "the extension never connected")
	}
	assert.Equal(t, "chrome-extension://"+extension.ID, info.Origin, "the real service worker's Origin")
	assert.Equal(t, extension.Version, info.Version)

	t.Run("navigate, type, click, read", func(t *testing.T) {
		res, err := hub.Navigate(ctx, site.URL+"/form")
		require.NoError(t, err)
		assert.Equal(t, site.URL+"/form", res.URL)
		assert.Equal(t, "Search", res.Title)

		_, err = hub.Type(ctx, "#q", "usb hub", &extbridge.TypeOptions{PressEnter: true})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			res, err := hub.Read(ctx, "#r")
			require.NoError(ct, err)
			assert.Equal(ct, "You searched: usb hub", res.Content)
		}, 10*time.Second, 100*time.Millisecond)

		_, err = hub.Navigate(ctx, site.URL+"/counter")
		require.NoError(t, err)
		_, err = hub.Click(ctx, "#inc")
		require.NoError(t, err)
		res, err = hub.Command(ctx, extbridge.BrowserCommand{Action: "read", Selector: "h1"})
		require.NoError(t, err)
		assert.Equal(t, "Counter", res.Content)

		_, err = hub.Click(ctx, "#no-such-element")
		var ce *extbridge.CommandError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, extbridge.ActionClick, ce.Action)
		assert.NotEmpty(t, ce.Message)
	})

	t.Run("read never shows a password", func(t *testing.T) {
		_, err := hub.Navigate(ctx, site.URL+"/login")
		require.NoError(t, err)
		res, err := hub.Read(ctx, "")
		require.NoError(t, err)
		assert.Contains(t, res.Content, "Welcome back")
		assert.NotContains(t, res.Content, "hunter2-secret")
		res, err = hub.Read(ctx, "#pw")
		require.NoError(t, err)
		assert.NotContains(t, res.Content, "hunter2-secret")
	})

	t.Run("screenshot and tabs", func(t *testing.T) {
		_, err := hub.Navigate(ctx, site.URL+"/counter")
		require.NoError(t, err)
		shot, err := hub.Screenshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, site.URL+"/counter", shot.URL)
		require.Equal(t, "image/png", shot.MIMEType)
		img, err := png.DecodeConfig(bytes.NewReader(shot.Data))
		require.NoError(t, err)
		assert.Positive(t, img.Width)
		assert.Positive(t, img.Height)

		tabs, err := hub.Tabs(ctx)
		require.NoError(t, err)
		var active []string
		for _, tab := range tabs {
			if tab.Active {
				active = append(active, tab.URL)
			}
		}
		assert.Equal(t, []string{site.URL + "/counter"}, active)
	})

	t.Run("approvals answered by the panel", func(t *testing.T) {
		d, err := hub.RequestApproval(ctx, extbridge.ApprovalRequest{ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
		require.NoError(t, err)
		assert.Equal(t, extbridge.Approved, d)
	})

	t.Run("a hub restart is survived by reconnecting", func(t *testing.T) {
		stopHub()
		assert.False(t, hub.Connected())
		hub2, _, _ := startHub(t, "127.0.0.1:"+strconv.Itoa(port), token, connected)
		select {
		case <-connected:
		case <-ctx.Done():
			require.FailNow(t, "the extension did not reconnect to the restarted hub")
		}
		res, err := hub2.Navigate(ctx, site.URL+"/form")
		require.NoError(t, err)
		assert.Equal(t, "Search", res.Title)
	})
}
