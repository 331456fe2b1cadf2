package extbridge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// The panel's "New chat" sends the user_message "/clear": the Backend gets
// NewSession, never a "/clear" message, and the panel an empty snapshot.
func TestNewChatStartsSession(t *testing.T) {
	b := &recordingBackend{active: "new"}
	e := newEnv(t, HubOptions{Backend: b})
	ext := e.dial(extbridgetest.Options{})
	require.NoError(t, ext.NewChat(t.Context()))
	// Bounded, so that a hub that never answers fails the test.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f, err := ext.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, `{"type":"conversation_snapshot","messages":[]}`, string(f.Raw))
	require.NoError(t, ext.UserMessage(t.Context(), "/clear please"))
	_, err = ext.Request(t.Context(), "list_skills", "skills")
	require.NoError(t, err)
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Equal(t, "fresh", b.active, "NewSession was called")
	require.Len(t, b.messages, 1)
	assert.Equal(t, "/clear please", b.messages[0].Content, "only the exact command starts a session")
}

// Every frame the current extension sends after a connect, and the
// panel's slash commands, reach the Backend; with BaseBackend each gets a
// sane answer (arrays, never null).
func TestPanelFramesWithBaseBackend(t *testing.T) {
	e := newEnv(t, HubOptions{})
	ext := e.dial(extbridgetest.Options{})
	require.NoError(t, ext.Reconnected(t.Context(), "gone"))
	for _, want := range []string{
		`{"type":"conversations","conversations":[]}`,
		`{"type":"skills","skills":[]}`,
		`{"type":"models","models":[],"current":""}`,
		`{"type":"history","history":[]}`,
	} {
		assert.Equal(t, want, string(next(t, ext).Raw))
	}
	require.NoError(t, ext.Ping(t.Context()))
	require.NoError(t, ext.Interrupt(t.Context()))
	mode, err := ext.SetMode(t.Context(), "bogus")
	require.NoError(t, err)
	assert.Equal(t, "standard", mode)
	models, err := ext.SelectModel(t.Context(), "openai/gpt-x")
	require.NoError(t, err)
	assert.Equal(t, `{"type":"models","models":[],"current":""}`, string(models.Raw))
	assert.Equal(t, `{"type":"mode","mode":"standard"}`, string(next(t, ext).Raw))
	// No snapshot for the unknown conversation, nothing for ping or
	// interrupt: nothing else is queued.
	require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_skills"}`)))
	assert.Equal(t, "skills", next(t, ext).Type)
	assert.True(t, e.hub.Connected())
}

func TestPanelFramesReachBackend(t *testing.T) {
	b := &recordingBackend{}
	e := newEnv(t, HubOptions{Backend: b})
	ext := e.dial(extbridgetest.Options{})
	require.NoError(t, ext.Reconnected(t.Context(), "new"))
	types := []string{}
	for range 5 {
		types = append(types, next(t, ext).Type)
	}
	assert.Equal(t, []string{"conversations", "skills", "models", "history", "conversation_snapshot"}, types)
	require.NoError(t, ext.Interrupt(t.Context()))
	mode, err := ext.SetMode(t.Context(), "plan")
	require.NoError(t, err)
	assert.Equal(t, "plan", mode)
	_, err = ext.SelectModel(t.Context(), "openai/gpt-4o")
	require.NoError(t, err)
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Equal(t, 1, b.interrupts)
	assert.Equal(t, "openai/gpt-4o", b.model)
	assert.Equal(t, Mode("plan"), b.mode)
}
