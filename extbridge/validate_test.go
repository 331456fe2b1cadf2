package extbridge

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// Commands the extension would misread are refused before anything goes on
// the wire (the real extension opened "not-a-url" as
// chrome-extension://<id>/not-a-url and reported success).
func TestCommandsValidatedBeforeSending(t *testing.T) {
	e := newEnv(t, HubOptions{})
	var sent atomic.Int32
	e.dial(extbridgetest.Options{Browser: answer(func(c *extbridgetest.Command) *extbridgetest.Result {
		sent.Add(1)
		return &extbridgetest.Result{URL: c.URL}
	})})

	refused := []struct {
		name   string
		action CommandAction
		why    string
		run    func(context.Context, *Hub) error
	}{
		{"relative url", ActionNavigate, "not absolute", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "not-a-url"); return err }},
		{"empty url", ActionNavigate, "empty URL", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, ""); return err }},
		{"host without scheme", ActionNavigate, "not absolute", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "example.com/x"); return err }},
		{"javascript", ActionNavigate, `"javascript" is not allowed`, func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "javascript:alert(1)"); return err }},
		{"chrome by default", ActionNavigate, "not allowed", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "chrome://settings"); return err }},
		{"http without host", ActionNavigate, "no host", func(ctx context.Context, h *Hub) error { _, err := h.Navigate(ctx, "http:///path"); return err }},
		{"click empty selector", ActionClick, "empty selector", func(ctx context.Context, h *Hub) error { _, err := h.Click(ctx, " "); return err }},
		{"type empty selector", ActionType, "empty selector", func(ctx context.Context, h *Hub) error { _, err := h.Type(ctx, "", "x", nil); return err }},
		{"raw command", ActionNavigate, "not absolute", func(ctx context.Context, h *Hub) error {
			_, err := h.Command(ctx, BrowserCommand{Action: ActionNavigate, URL: "/relative"})
			return err
		}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(t.Context(), e.hub)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidCommand)
			var ce *CommandError
			require.ErrorAs(t, err, &ce)
			assert.True(t, ce.Invalid)
			assert.Equal(t, tt.action, ce.Action)
			assert.Contains(t, err.Error(), tt.why)
			assert.Contains(t, err.Error(), "extbridge: invalid "+tt.action)
		})
	}
	assert.Zero(t, sent.Load(), "no refused command reached the extension")

	for _, u := range []string{"https://example.com/a?b", "HTTP://example.com", "about:blank", "data:text/html,<p>x</p>", "file:///tmp/x.html"} {
		res, err := e.hub.Navigate(t.Context(), u)
		require.NoError(t, err, u)
		assert.Equal(t, u, res.URL)
	}
	_, err := e.hub.Click(t.Context(), "#go")
	require.NoError(t, err)
	_, err = e.hub.Read(t.Context(), "")
	require.NoError(t, err, "read without selector means the body")
	assert.EqualValues(t, 7, sent.Load())
}

func TestNavigateSchemesOption(t *testing.T) {
	e := newEnv(t, HubOptions{NavigateSchemes: []string{"HTTPS", "chrome"}})
	e.dial(extbridgetest.Options{Browser: answer(func(c *extbridgetest.Command) *extbridgetest.Result {
		return &extbridgetest.Result{URL: c.URL}
	})})
	_, err := e.hub.Navigate(t.Context(), "chrome://settings")
	require.NoError(t, err)
	_, err = e.hub.Navigate(t.Context(), "http://example.com")
	require.ErrorIs(t, err, ErrInvalidCommand)
	assert.Contains(t, err.Error(), "allowed: https, chrome")
}
