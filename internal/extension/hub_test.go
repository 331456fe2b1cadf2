package extension_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/extension"
)

// hubOpen navigates the controlled tab to path through the hub.
func hubOpen(t testing.TB, fx *fixture, c *hubConn, path string) map[string]any {
	t.Helper()
	r := c.command(t, map[string]any{"action": "navigate", "url": fx.url(path)})
	require.Equal(t, "", r["error"])
	require.Equal(t, fx.url(path), r["url"])
	return r
}

func hubRead(t testing.TB, c *hubConn, selector string) string {
	t.Helper()
	fields := map[string]any{"action": "read"}
	if selector != "" {
		fields["selector"] = selector
	}
	r := c.command(t, fields)
	require.Equal(t, "", r["error"])
	content, _ := r["content"].(string)
	return content
}

func TestHubHello(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)
	assert.Equal(t, extension.Origin, c.origin, "the real service worker sends its extension origin")
	assert.Equal(t, "browser_hello", c.hello["type"])
	assert.Equal(t, hubToken, c.hello["token"])
	assert.Equal(t, extension.Version, c.hello["extension_version"])
}

func TestHubPing(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)
	select {
	case <-c.pings:
	case <-c.done:
		require.FailNow(t, "connection closed")
	case <-time.After(30 * time.Second):
		require.FailNow(t, `no {"type":"ping"} within 30 s`)
	}
}

func TestHubBrowserCommands(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)

	t.Run("navigate", func(t *testing.T) {
		r := hubOpen(t, fx, c, "/plain")
		assert.Equal(t, "Plain", r["title"])
		assert.Equal(t, []any{}, r["events"])
	})

	t.Run("click", func(t *testing.T) {
		hubOpen(t, fx, c, "/click")
		r := c.command(t, map[string]any{"action": "click", "selector": "#inc"})
		require.Equal(t, "", r["error"])
		assert.Equal(t, fx.url("/click"), r["url"], "results carry the controlled tab's url")
		assert.Equal(t, "Click", r["title"])
		assert.Equal(t, "clicked 1", hubRead(t, c, "#count"))
	})

	t.Run("type and press enter", func(t *testing.T) {
		hubOpen(t, fx, c, "/form")
		r := c.command(t, map[string]any{"action": "type", "selector": "#q", "text": "no enter"})
		require.Equal(t, "", r["error"])
		assert.Equal(t, fx.url("/form"), r["url"])
		assert.Contains(t, hubRead(t, c, "form"), "Query: no enter")

		r = c.command(t, map[string]any{"action": "type", "selector": "input[name=q]", "text": "go fast", "press_enter": true})
		require.Equal(t, "", r["error"])
		assert.Equal(t, fx.url("/result?q=go+fast"), r["url"], "the result is sent once the submitted page loaded")
		assert.Equal(t, "You searched: go fast", hubRead(t, c, "#result"))
	})

	t.Run("read", func(t *testing.T) {
		hubOpen(t, fx, c, "/plain")
		body := hubRead(t, c, "")
		assert.Contains(t, body, "Plain page")
		assert.Contains(t, body, "Nothing to see")
		assert.Equal(t, "Nothing to see", hubRead(t, c, "#text"))
	})

	t.Run("screenshot", func(t *testing.T) {
		hubOpen(t, fx, c, "/controls")
		r := c.command(t, map[string]any{"action": "screenshot"})
		require.Equal(t, "", r["error"])
		assert.Equal(t, "image/png", r["image_mime_type"])
		data, err := base64.StdEncoding.DecodeString(r["image"].(string))
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err)
		l := fx.native(t)
		s := takeSnapshot(t, l)
		assert.Equal(t, s.Viewport.W, img.Bounds().Dx())
		assert.Equal(t, s.Viewport.H, img.Bounds().Dy())
	})

	t.Run("tabs", func(t *testing.T) {
		hubOpen(t, fx, c, "/plain")
		r := c.command(t, map[string]any{"action": "tabs"})
		require.Equal(t, "", r["error"])
		tabs, ok := r["tabs"].([]any)
		require.True(t, ok, "%v", r)
		require.NotEmpty(t, tabs)
		controlled := 0
		for _, raw := range tabs {
			tab := raw.(map[string]any)
			assert.Contains(t, tab, "index")
			assert.Contains(t, tab, "active")
			if tab["controlled"] == true {
				controlled++
				assert.Equal(t, fx.url("/plain"), tab["url"])
				assert.Equal(t, "Plain", tab["title"])
				assert.Equal(t, true, tab["active"])
			}
		}
		assert.Equal(t, 1, controlled)
	})

	t.Run("failures", func(t *testing.T) {
		hubOpen(t, fx, c, "/plain")
		for _, tc := range []struct {
			fields map[string]any
			error  string
		}{
			{map[string]any{"action": "click", "selector": "#missing"}, "No element matches"},
			{map[string]any{"action": "click", "selector": "[["}, "Invalid selector"},
			{map[string]any{"action": "type", "selector": "h1", "text": "x"}, "does not accept text"},
			{map[string]any{"action": "read", "selector": "#missing"}, "No element matches"},
			{map[string]any{"action": "navigate", "url": "file:///etc/passwd"}, "Unsupported URL scheme"},
			{map[string]any{"action": "navigate"}, "url is required"},
			{map[string]any{"action": "teleport"}, `unknown action "teleport"`},
		} {
			r := c.command(t, tc.fields)
			assert.Contains(t, r["error"], tc.error, "%v", tc.fields)
		}
	})
}

func TestHubReadRedactsSecrets(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)
	hubOpen(t, fx, c, "/secrets")
	// A value typed into a password field is as secret as one in the page.
	r := c.command(t, map[string]any{"action": "type", "selector": "input[name=pw]", "text": "S3CRET-typed"})
	require.Equal(t, "", r["error"])

	body := hubRead(t, c, "")
	form := hubRead(t, c, "#f")
	assert.Contains(t, body, "Public text")
	for _, content := range []string{body, form} {
		assert.Contains(t, content, "alice-visible", "ordinary fields are read")
		assert.Contains(t, content, "notes-visible")
		assert.Contains(t, content, "memo-visible")
		assert.NotContains(t, content, "S3CRET")
		assert.NotContains(t, content, "Amex", "not even the choices of a secret select")
		// One redaction for each of the ten secret inputs; innerText's own
		// copies of the secret select's options and of the secret editable
		// content; the select again among the form fields, in its value
		// and in its label, which holds it.
		assert.Equal(t, 14, strings.Count(content, "[redacted]"), content)
	}
	for _, sel := range []string{
		"input[name=pw]", "input[name=login]", "input[name=fresh]", "input[name=code]",
		"input[name=api_token]", "#client-secret", "input[aria-label='Card number']",
		"input[name=cvc]", "input[name=otp]", "input[name=passphrase]",
		"select[name=card_type]", "#secret-note", "#secret-note b",
	} {
		assert.Equal(t, "[redacted]", hubRead(t, c, sel), sel)
	}
	assert.Equal(t, "alice-visible", hubRead(t, c, "input[name=username]"))

	// The agent protocol's snapshot and extract follow the same rule: in
	// values, names, text snippets and extracted text, and in the page text
	// an extract returns before any snapshot.
	l := fx.native(t)
	before := action(t, l, "browser.extract", map[string]any{"refs": "visible"})
	require.NotEmpty(t, before.Result.Extracted)
	assert.Contains(t, before.Result.Extracted[0].Text, "Public text")
	s := takeSnapshot(t, l)
	all := action(t, l, "browser.extract", map[string]any{"refs": "all"})
	for _, v := range []any{before, s, all} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "S3CRET")
	}
	assert.Equal(t, "[redacted]", *s.find(t, "combobox", "Card type [redacted]").Value)
	assert.Equal(t, "[redacted]", *s.find(t, "textbox", "[redacted]").Value, "the secret editable's name is its text")
	assert.Equal(t, "memo-visible", *s.find(t, "textbox", "Memo").Value)
}

func TestHubCommandTimeout(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)
	hubOpen(t, fx, c, "/plain")
	g := fx.site.arm()
	defer g.open()

	slow := map[string]any{"type": "browser_command", "id": "slow-1", "action": "navigate", "url": fx.url("/hang"), "timeout_ms": 300}
	c.send(t, slow)
	// The same id again while it runs: ignored, one result per id. Sent
	// right behind the first (frames arrive in order), so it is still
	// running however slow this machine is.
	c.send(t, slow)
	<-g.started
	f := c.frame(t)
	assert.Equal(t, "browser_result", f["type"])
	assert.Equal(t, "slow-1", f["id"])
	assert.Equal(t, "timed out after 300 ms", f["error"])
	g.open()

	// The same id once more after its result: still no second result.
	c.send(t, slow)
	// The next result is the next command's: no second slow-1.
	r := c.command(t, map[string]any{"action": "navigate", "url": fx.url("/plain")})
	assert.Equal(t, "", r["error"])
}

func TestHubIgnoresUnknownFrames(t *testing.T) {
	fx := getFixture(t)
	c := fx.hub.current(t)
	before := fx.hub.count()
	for _, frame := range []string{
		`{"type":"future_frame","x":1}`,
		`{"no_type":true}`,
		`{"type":42}`,
		`[1,2,3]`,
		`"a string"`,
		`null`,
		`not json at all`,
		`{"type":"browser_command"}`,
		`{"type":"approval_resolved","request_id":"never-seen"}`,
		`{"type":"approval_request"}`,
	} {
		c.sendRaw(t, websocket.MessageText, []byte(frame))
	}
	c.sendRaw(t, websocket.MessageBinary, []byte{0xff, 0x00, 0x01})
	r := c.command(t, map[string]any{"action": "tabs"})
	assert.Equal(t, "", r["error"])
	assert.Equal(t, before, fx.hub.count(), "the connection stayed up")
}

func TestHubApprovals(t *testing.T) {
	fx := getFixture(t)
	t.Cleanup(func() {
		// Back to the fixture's configuration for the tests that follow.
		assert.NoError(t, fx.browser.SetExtensionConfig(fx.cfg))
	})
	for _, tc := range []struct {
		policy extension.Approval
		action string
	}{
		{extension.ApprovalApprove, "approve"},
		{extension.ApprovalReject, "reject"},
		{extension.ApprovalIgnore, ""},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			cfg := fx.cfg
			cfg.Approvals = tc.policy
			require.NoError(t, fx.browser.SetExtensionConfig(cfg))
			// The extension reads its configuration again when it
			// reconnects: drop the connection.
			old := fx.hub.current(t)
			n := fx.hub.count()
			old.ws.Close(websocket.StatusGoingAway, "test reconnect")
			c := fx.hub.next(t, n)

			c.send(t, map[string]any{"type": "approval_request", "request_id": "appr-1", "tool_name": "Bash", "tool_args": `{"command":"ls"}`})
			// A command after the request: with "ignore" its result is the
			// next frame; otherwise the answer comes first.
			c.send(t, map[string]any{"type": "browser_command", "id": "after-appr", "action": "tabs", "timeout_ms": 30000})
			f := c.frame(t)
			if tc.action == "" {
				assert.Equal(t, "browser_result", f["type"], "no approval_response: %v", f)
				return
			}
			assert.Equal(t, map[string]any{"type": "approval_response", "request_id": "appr-1", "action": tc.action}, f)
			f = c.frame(t)
			assert.Equal(t, "browser_result", f["type"])
			c.send(t, map[string]any{"type": "approval_resolved", "request_id": "appr-1"})
		})
	}
}

func TestHubReconnects(t *testing.T) {
	fx := getFixture(t)
	first := fx.hub.current(t)
	port := fx.hub.port()

	t.Run("hub restart", func(t *testing.T) {
		fx.hub.close()
		<-first.done
		h, err := startFakeHub(fmt.Sprintf("127.0.0.1:%d", port))
		require.NoError(t, err, "listening again on the same port")
		fx.hub = h
		c := fx.hub.next(t, 0)
		assert.Equal(t, hubToken, c.hello["token"])
		r := hubOpen(t, fx, c, "/plain")
		assert.Equal(t, "Plain", r["title"])
	})

	t.Run("refused hellos", func(t *testing.T) {
		c := fx.hub.current(t)
		n := fx.hub.count()
		fx.hub.refuse.Store(2)
		c.ws.Close(websocket.StatusGoingAway, "test reconnect")
		// Two refusals (1008), then accepted: the extension keeps trying.
		next := fx.hub.next(t, n)
		assert.Equal(t, int32(0), fx.hub.refuse.Load())
		r := next.command(t, map[string]any{"action": "tabs"})
		assert.Equal(t, "", r["error"])
	})
}
