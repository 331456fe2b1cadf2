package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"image/jpeg"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extension"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChromium drives real headless Chromium with the reference extension
// through MCP: agentbridge-mcp → agent socket → the Go native host Chromium
// started → the extension → a local page. It skips without Chromium, and
// fails instead when CI is set.
func TestChromium(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	host := browsertest.BuildHost(t, "github.com/agentbridge/agentbridge/examples/weboperator-host")
	// Unix socket paths are short (108 bytes): keep it out of the long test
	// temp dir.
	dir, err := os.MkdirTemp("", "mcp-e2e-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "bridge.sock")
	raw := make([]byte, 16)
	rand.Read(raw)
	token := hex.EncodeToString(raw)
	// The extension dials agentbridge-mcp's hub too: its port is chosen
	// before Chromium starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hubPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	browser := browsertest.Start(t, &browsertest.Options{
		Host:      host,
		Env:       []string{agentproto.EnvToken + "=" + token, agentproto.EnvSocket + "=" + socket},
		Extension: &extension.Options{HubPort: hubPort, HubToken: hubToken, HubBackoffMin: 100 * time.Millisecond, HubBackoffMax: 500 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	probe, err := browsertest.DialAgent(ctx, socket, token)
	require.NoError(t, err, "the host never came online; chromium output:\n%s", browser.Output())
	probe.Close()

	pages := browsertest.NewPageServer(t, map[string]string{
		"/": `<!doctype html><html><head><title>MCP e2e</title></head><body style="background:#fff">
<h1>Hello from the MCP test</h1><a href="/next">Next page</a><button>Press me</button></body></html>`,
		"/next": `<!doctype html><title>Next</title><p>next</p>`,
	})

	cs, stderr := startStdio(t, nil, []string{agentproto.EnvSocket + "=" + socket, agentproto.EnvToken + "=" + token, envHubToken + "=" + hubToken},
		"--bridge", "--hub", "127.0.0.1:"+strconv.Itoa(hubPort))
	res := call(t, cs, tools.BrowserNavigate, map[string]any{"url": pages.URL + "/"})
	require.False(t, res.IsError, "%s\nstderr:\n%s", text(res), stderr)
	assert.Contains(t, text(res), pages.URL+"/")

	res = call(t, cs, tools.BrowserSnapshot, map[string]any{})
	require.False(t, res.IsError, text(res))
	assert.Contains(t, text(res), "Next page")
	assert.Contains(t, text(res), "Press me")
	assert.Contains(t, text(res), "@e")

	res = call(t, cs, tools.BrowserScreenshot, map[string]any{})
	require.False(t, res.IsError, text(res))
	require.NotEmpty(t, res.Content)
	img, ok := res.Content[0].(*mcp.ImageContent)
	require.True(t, ok, "%#v", res.Content[0])
	// The reference extension's native side captures JPEG, as WebOperator's
	// does: the MIME type is the data URL's.
	assert.Equal(t, "image/jpeg", img.MIMEType)
	decoded, err := jpeg.Decode(bytes.NewReader(img.Data))
	require.NoError(t, err, "the screenshot is a JPEG")
	assert.Positive(t, decoded.Bounds().Dx())

	// The same browser through the hub: its side captures PNG.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res = call(t, cs, "hub_tabs", map[string]any{})
		if !res.IsError || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.False(t, res.IsError, "the extension never connected to the hub: %s", text(res))
	res = call(t, cs, "hub_read", map[string]any{"selector": "h1"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "Hello from the MCP test", text(res))
	res = call(t, cs, "hub_screenshot", map[string]any{})
	require.False(t, res.IsError, text(res))
	img, ok = res.Content[0].(*mcp.ImageContent)
	require.True(t, ok, "%#v", res.Content[0])
	assert.Equal(t, "image/png", img.MIMEType)
	decoded, err = png.Decode(bytes.NewReader(img.Data))
	require.NoError(t, err, "the screenshot is a PNG")
	assert.Positive(t, decoded.Bounds().Dx())
	assert.Positive(t, decoded.Bounds().Dy())
}
