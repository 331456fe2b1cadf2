package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extension"
)

const hostPackage = "github.com/agentbridge/agentbridge/examples/weboperator-host"

func newToken(t *testing.T) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// agentBridge is Chromium with the reference extension, whose native port
// Chromium connects to the real Go host.
type agentBridge struct {
	browser *browsertest.Browser
	socket  string
	token   string
}

func startAgentBridge(t *testing.T, reconnect time.Duration) *agentBridge {
	browsertest.SkipWithoutChromium(t)
	host := browsertest.BuildHost(t, hostPackage)
	// Unix socket paths are short (108 bytes): keep it out of the long
	// test temp dir.
	dir, err := os.MkdirTemp("", "e2e-sock-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	ab := &agentBridge{socket: filepath.Join(dir, "bridge.sock"), token: newToken(t)}
	ab.browser = browsertest.Start(t, &browsertest.Options{
		Host: host,
		Env: []string{
			agentproto.EnvToken + "=" + ab.token,
			agentproto.EnvSocket + "=" + ab.socket,
		},
		Extension: &extension.Options{NativeReconnectDelay: reconnect},
	})
	return ab
}

// dial connects an agent once the host is up and the extension has said
// hello.
func (ab *agentBridge) dial(t *testing.T) *agentproto.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := browsertest.DialAgent(ctx, ab.socket, ab.token)
	require.NoError(t, err, "the host never came online; chromium output:\n%s", ab.browser.Output())
	return c
}

func findNode(t *testing.T, s *agentproto.Snapshot, role, name string) agentproto.Node {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Role == role && n.Name == name {
			return n
		}
	}
	require.Failf(t, "node not found", "no %s named %q among %d nodes", role, name, len(s.Nodes))
	return agentproto.Node{}
}

func TestAgentProtocolInChromium(t *testing.T) {
	site := servePages(t)
	ab := startAgentBridge(t, 2*time.Second)
	c := ab.dial(t)
	defer c.Close()
	ctx := t.Context()

	events := c.Subscribe(nil)
	defer events.Close()

	t.Run("health", func(t *testing.T) {
		h, err := c.Health(ctx)
		require.NoError(t, err)
		assert.Equal(t, &agentproto.HealthResult{OK: true, Bridge: "online", Extension: "online", AuthRequired: true}, h)
	})

	t.Run("navigate and snapshot", func(t *testing.T) {
		nav, err := c.Navigate(ctx, agentproto.NavigateParams{URL: site.URL + "/form"})
		require.NoError(t, err)
		assert.True(t, nav.OK)
		assert.Equal(t, site.URL+"/form", nav.URL)
		assert.NotZero(t, nav.TabID)

		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		assert.Equal(t, "Search", s.Title)
		box := findNode(t, s, "textbox", "Query")
		btn := findNode(t, s, "button", "Search")
		assert.Regexp(t, `^@e\d+$`, box.Ref)
		assert.True(t, box.InViewport)
		assert.NotZero(t, btn.BBox.W)
	})

	t.Run("type and press Enter submit a form", func(t *testing.T) {
		_, err := c.Navigate(ctx, agentproto.NavigateParams{URL: site.URL + "/form"})
		require.NoError(t, err)
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		box := findNode(t, s, "textbox", "Query")
		res, err := c.Type(ctx, agentproto.TypeParams{Ref: box.Ref, Text: "wireless keyboard"})
		require.NoError(t, err)
		require.True(t, res.OK(), "type: %+v", res.Result)
		res, err = c.Press(ctx, agentproto.PressParams{Key: "Enter", Ref: box.Ref})
		require.NoError(t, err)
		require.True(t, res.OK(), "press: %+v", res.Result)

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
			require.NoError(ct, err)
			assert.Equal(ct, "Results", s.Title)
			assert.Contains(ct, s.URL, "/result?q=wireless+keyboard")
		}, 10*time.Second, 100*time.Millisecond)
		res, err = c.Extract(ctx, agentproto.ExtractParams{Refs: agentproto.ExtractAll})
		require.NoError(t, err)
		assert.True(t, slices.ContainsFunc(res.Result.Extracted, func(e agentproto.ExtractedItem) bool {
			return strings.Contains(e.Text, "You searched: wireless keyboard")
		}), "extracted: %+v", res.Result.Extracted)
	})

	t.Run("click changes the page", func(t *testing.T) {
		_, err := c.Navigate(ctx, agentproto.NavigateParams{URL: site.URL + "/counter"})
		require.NoError(t, err)
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		btn := findNode(t, s, "button", "Add one")
		for range 2 {
			res, err := c.Click(ctx, agentproto.ClickParams{Ref: btn.Ref, Reason: "count"})
			require.NoError(t, err)
			require.True(t, res.OK(), "click: %+v", res.Result)
		}
		s, err = c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		assert.Equal(t, "2", findNode(t, s, "textbox", "Count").Value)
		res, err := c.Extract(ctx, agentproto.ExtractParams{Refs: agentproto.ExtractRefs(findNode(t, s, "textbox", "Count").Ref)})
		require.NoError(t, err)
		require.Len(t, res.Result.Extracted, 1)
		assert.Equal(t, "2", res.Result.Extracted[0].Value)

		// An action on a stale ref is a failed result, not an error.
		res, err = c.Click(ctx, agentproto.ClickParams{Ref: "@e999"})
		require.NoError(t, err)
		assert.False(t, res.OK())
		assert.NotEmpty(t, res.Result.Error)
	})

	t.Run("scroll", func(t *testing.T) {
		_, err := c.Navigate(ctx, agentproto.NavigateParams{URL: site.URL + "/long"})
		require.NoError(t, err)
		res, err := c.Scroll(ctx, agentproto.ScrollParams{Direction: agentproto.ScrollBottom})
		require.NoError(t, err)
		require.True(t, res.OK())
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		assert.Greater(t, s.Viewport.ScrollY, 2000.0)
		assert.True(t, findNode(t, s, "button", "Bottom button").InViewport)

		res, err = c.Scroll(ctx, agentproto.ScrollParams{Direction: agentproto.ScrollTop})
		require.NoError(t, err)
		require.True(t, res.OK())
		s, err = c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		assert.Zero(t, s.Viewport.ScrollY)
	})

	t.Run("screenshot is an image of the viewport's size", func(t *testing.T) {
		_, err := c.Navigate(ctx, agentproto.NavigateParams{URL: site.URL + "/counter"})
		require.NoError(t, err)
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		shot, err := c.Screenshot(ctx, agentproto.ScreenshotParams{})
		require.NoError(t, err)
		assert.Equal(t, "image/jpeg", shot.MIMEType)
		img, err := jpeg.DecodeConfig(bytes.NewReader(shot.Data))
		require.NoError(t, err)
		assert.Equal(t, int(s.Viewport.W), img.Width)
		assert.Equal(t, int(s.Viewport.H), img.Height)
	})

	t.Run("task events arrive", func(t *testing.T) {
		task, err := c.StartTask(ctx, agentproto.StartTaskParams{
			Goal: "navigate " + site.URL + "/counter; click #inc; extract", AutoConfirm: true,
		})
		require.NoError(t, err)
		done, err := c.WaitTask(ctx, agentproto.WaitParams{ID: task.ID, TimeoutMs: 20000})
		require.NoError(t, err)
		assert.Equal(t, agentproto.StatusDone, done.Status)

		var kinds []agentproto.EventKind
		deadline := time.After(10 * time.Second)
		for !slices.Contains(kinds, agentproto.EventTaskStep) || !slices.Contains(kinds, agentproto.EventTaskUpdate) {
			select {
			case ev := <-events.Events():
				if ev.TaskID() == task.ID {
					kinds = append(kinds, ev.Kind)
				}
			case <-deadline:
				require.FailNow(t, "no task events", "got %v", kinds)
			}
		}
	})

	t.Run("a request over 1 MiB is refused and the link stays up", func(t *testing.T) {
		_, err := c.Type(ctx, agentproto.TypeParams{Ref: "@e1", Text: strings.Repeat("x", 1<<20+10)})
		require.Error(t, err)
		assert.ErrorIs(t, err, agentproto.ErrRequestTooLarge)
		h, err := c.Health(ctx)
		require.NoError(t, err)
		assert.True(t, h.ExtensionOnline())
		_, err = c.Snapshot(ctx, agentproto.SnapshotParams{})
		assert.NoError(t, err)
	})

	t.Run("a dropped port ends the host and a new one comes up", func(t *testing.T) {
		before := ab.browser.HostPids()
		require.Len(t, before, 1)
		oldSocket, err := os.Stat(ab.socket)
		require.NoError(t, err)
		require.NoError(t, c.Call(ctx, "debug.dropNativePort", nil, nil))

		// The host sees EOF, fails what is pending, removes its socket and exits.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.NoError(t, browsertest.WaitExit(wctx, before[0]))
		_, err = c.Health(ctx)
		assert.ErrorIs(t, err, agentproto.ErrClosed, "the old connection is gone")
		// The socket file is gone, or is a new host's (the reconnect delay
		// is 2 s, which a loaded machine may take to get here): never the
		// old one left behind.
		if now, err := os.Stat(ab.socket); err == nil {
			assert.False(t, os.SameFile(oldSocket, now), "the old host left its socket file behind")
		} else {
			assert.ErrorIs(t, err, os.ErrNotExist)
		}

		c2 := ab.dial(t)
		defer c2.Close()
		after := ab.browser.HostPids()
		require.Len(t, after, 1)
		assert.NotEqual(t, before[0], after[0])
		_, err = c2.Snapshot(ctx, agentproto.SnapshotParams{})
		assert.NoError(t, err)
	})
}
