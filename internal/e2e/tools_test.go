package e2e

import (
	"bytes"
	"encoding/json"
	"image/jpeg"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
)

// The shared tool catalogue, run through the real host and the reference
// extension in Chromium.
func TestToolCatalogueInChromium(t *testing.T) {
	site := servePages(t)
	ab := startAgentBridge(t, 2*time.Second)
	c := ab.dial(t)
	defer c.Close()
	ctx := t.Context()
	tool := func(name, args string) *tools.Result {
		t.Helper()
		res, err := tools.Call(ctx, c, name, json.RawMessage(args), nil)
		require.NoError(t, err, "%s %s", name, args)
		return res
	}
	snapshot := func() *agentproto.Snapshot {
		t.Helper()
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(t, err)
		return s
	}

	t.Run("navigate and click by selector", func(t *testing.T) {
		tool("browser_navigate", `{"url":"`+site.URL+`/counter"}`)
		res := tool("browser_click", `{"selector":"#inc"}`)
		var action agentproto.ActionResult
		require.NoError(t, json.Unmarshal(res.Result, &action))
		assert.True(t, action.OK(), "click: %s", res.Text)
		assert.Equal(t, "1", findNode(t, snapshot(), "textbox", "Count").Value)
	})

	t.Run("snapshot text is the result as JSON", func(t *testing.T) {
		res := tool("browser_snapshot", `{}`)
		assert.Contains(t, res.Text, `"title": "Counter"`)
		assert.Nil(t, res.Image)
	})

	t.Run("scroll's default distance reaches the page", func(t *testing.T) {
		tool("browser_navigate", `{"url":"`+site.URL+`/long"}`)
		tool("browser_scroll", `{}`)
		assert.Equal(t, float64(tools.DefaultScrollAmount), snapshot().Viewport.ScrollY)
	})

	t.Run("screenshot is a decoded image", func(t *testing.T) {
		res := tool("browser_screenshot", ``)
		require.NotNil(t, res.Image, res.Text)
		assert.Equal(t, "image/jpeg", res.Image.MIMEType)
		_, err := jpeg.DecodeConfig(bytes.NewReader(res.Image.Data))
		require.NoError(t, err)
	})

	t.Run("a command the extension lacks is its error", func(t *testing.T) {
		_, err := tools.Call(ctx, c, "browser_solve_captcha", json.RawMessage(`{"type":"auto"}`), nil)
		assert.ErrorIs(t, err, agentproto.ErrUnknownRequest)
	})
}
