package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestDefaultBackendAnswersEmptyArrays(t *testing.T) {
	tests := []struct {
		send string
		want string
	}{
		{`{"type":"list_conversations"}`, `{"type":"conversations","conversations":[]}`},
		{`{"type":"list_history"}`, `{"type":"history","history":[]}`},
		{`{"type":"list_skills"}`, `{"type":"skills","skills":[]}`},
		{`{"type":"list_models"}`, `{"type":"models","models":[],"current":""}`},
		{`{"type":"new_session"}`, `{"type":"conversation_snapshot","messages":[]}`},
		{`{"type":"set_mode","mode":"auto"}`, `{"type":"mode","mode":"standard"}`},
	}
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		for _, tt := range tests {
			require.NoError(t, ext.SendRaw(t.Context(), []byte(tt.send)))
			f := next(t, ext)
			// Exact bytes: arrays, never null.
			assert.Equal(t, tt.want, string(f.Raw), tt.send)
		}
		// resume with the default backend: no reply; the next answer is
		// the one to the following frame.
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"resume_conversation","id":"x"}`)))
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_skills"}`)))
		assert.Equal(t, "skills", next(t, ext).Type)
	})
}

// recordingBackend is a Backend with content, recording what it is told.
type recordingBackend struct {
	BaseBackend
	mu         sync.Mutex
	mode       Mode
	model      string
	active     string
	messages   []UserMessage
	fail       bool
	interrupts int
}

func (b *recordingBackend) ListConversations(context.Context) ([]Conversation, error) {
	if b.fail {
		return nil, errors.New("disk on fire")
	}
	t0 := time.Date(2026, 8, 16, 12, 0, 0, 0, time.UTC)
	return []Conversation{
		{ID: "old", Title: "old one", UpdatedAt: t0, MessageCount: 2},
		{ID: "new", Title: "new one", UpdatedAt: t0.Add(time.Hour).In(time.FixedZone("X", 3600)), MessageCount: 12},
	}, nil
}

func (b *recordingBackend) ResumeConversation(_ context.Context, id string) (*ConversationSnapshot, error) {
	if id != "new" {
		return nil, ErrUnknownConversation
	}
	b.mu.Lock()
	b.active = id
	b.mu.Unlock()
	return &ConversationSnapshot{
		Messages:    []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`), json.RawMessage(`{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]}`)},
		ToolResults: map[string]bool{"c1": true},
	}, nil
}

func (b *recordingBackend) NewSession(context.Context, SessionOptions) (*ConversationSnapshot, error) {
	b.mu.Lock()
	b.active = "fresh"
	b.mu.Unlock()
	return &ConversationSnapshot{}, nil
}

func (b *recordingBackend) UserMessage(_ context.Context, m UserMessage, _ *Reply) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.messages = append(b.messages, m)
	if b.active == "" {
		return errors.New("no active conversation")
	}
	return nil
}

func (b *recordingBackend) ListHistory(context.Context) ([]string, error) {
	h := make([]string, 1500)
	for i := range h {
		h[i] = strings.Repeat("x", i%3+1)
	}
	h[1499] = "line one\nline two"
	return h, nil
}

func (b *recordingBackend) ListSkills(context.Context) ([]PanelSkill, error) {
	return []PanelSkill{{Name: "tmux", Description: "project", Scope: "project"}, {Name: "tmux", Description: "user", Scope: "user"}, {Name: "gh:pr", Scope: "plugin"}}, nil
}

func (b *recordingBackend) ListModels(context.Context) (Models, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Models{Models: []string{"anthropic/claude-sonnet-4-5", "openai/gpt-4o"}, Current: b.model}, nil
}

func (b *recordingBackend) SelectModel(_ context.Context, m string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m != "openai/gpt-4o" && m != "anthropic/claude-sonnet-4-5" {
		return errors.New("unknown model")
	}
	b.model = m
	return nil
}

func (b *recordingBackend) Mode(context.Context) (Mode, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mode, nil
}

func (b *recordingBackend) SetMode(_ context.Context, m Mode) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mode = m
	return nil
}

func (b *recordingBackend) Interrupt(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.interrupts++
	return nil
}

func TestPanelFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recordingBackend{mode: ModePlan, model: "anthropic/claude-sonnet-4-5"}
		e := newEnv(t, HubOptions{Backend: b})
		ext, err := e.connect(extbridgetest.Options{})
		require.NoError(t, err)
		defer ext.Close()
		assert.Equal(t, `{"type":"mode","mode":"plan"}`, string(next(t, ext).Raw), "mode follows the ack")
		send := func(s string) {
			t.Helper()
			require.NoError(t, ext.SendRaw(t.Context(), []byte(s)))
		}

		send(`{"type":"list_conversations"}`)
		assert.JSONEq(t, `{"type":"conversations","conversations":[
			{"id":"new","title":"new one","updated_at":"2026-08-16T13:00:00Z","message_count":12},
			{"id":"old","title":"old one","updated_at":"2026-08-16T12:00:00Z","message_count":2}]}`, string(next(t, ext).Raw))

		send(`{"type":"resume_conversation","id":""}`)
		send(`{"type":"resume_conversation","id":"unknown"}`)
		send(`{"type":"resume_conversation","id":"new"}`)
		assert.JSONEq(t, `{"type":"conversation_snapshot","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]}],"tool_results":{"c1":true}}`,
			string(next(t, ext).Raw), "empty and unknown ids get no reply")

		// new_session is complete before the next frame is read.
		send(`{"type":"new_session"}`)
		send(`{"type":"user_message","content":"  hello  "}`)
		send(`{"type":"user_message","content":"   "}`)
		send(`{"type":"user_message","content":"","attachments":[{"type":"image","data":"x"}]}`)
		assert.Equal(t, `{"type":"conversation_snapshot","messages":[]}`, string(next(t, ext).Raw))

		send(`{"type":"list_history"}`)
		var hist struct{ History []string }
		require.NoError(t, next(t, ext).Decode(&hist))
		assert.Len(t, hist.History, 1000)
		assert.Equal(t, "line one\nline two", hist.History[999], "newest last, multi-line kept")

		send(`{"type":"list_skills"}`)
		assert.JSONEq(t, `{"type":"skills","skills":[{"name":"tmux","description":"project","scope":"project"},{"name":"gh:pr","description":"","scope":"plugin"}]}`, string(next(t, ext).Raw))

		send(`{"type":"select_model","model":"openai/gpt-4o"}`)
		assert.JSONEq(t, `{"type":"models","models":["anthropic/claude-sonnet-4-5","openai/gpt-4o"],"current":"openai/gpt-4o"}`, string(next(t, ext).Raw))
		assert.JSONEq(t, `{"type":"mode","mode":"plan"}`, string(next(t, ext).Raw))
		send(`{"type":"select_model","model":"bogus/model"}`)
		assert.JSONEq(t, `{"type":"models","models":["anthropic/claude-sonnet-4-5","openai/gpt-4o"],"current":"openai/gpt-4o"}`, string(next(t, ext).Raw), "a failed switch shows the unchanged current model")
		assert.Equal(t, "mode", next(t, ext).Type)

		send(`{"type":"set_mode","mode":"auto-with-judge"}`)
		assert.JSONEq(t, `{"type":"mode","mode":"auto-with-judge"}`, string(next(t, ext).Raw))
		send(`{"type":"set_mode","mode":"yolo"}`)
		assert.JSONEq(t, `{"type":"mode","mode":"auto-with-judge"}`, string(next(t, ext).Raw), "unknown mode ignored, answered anyway")

		send(`{"type":"interrupt"}`)
		send(`{"type":"list_models"}`)
		assert.Equal(t, "models", next(t, ext).Type)

		b.mu.Lock()
		defer b.mu.Unlock()
		assert.Equal(t, "fresh", b.active)
		assert.Equal(t, []UserMessage{
			{Content: "hello"},
			{Attachments: []json.RawMessage{json.RawMessage(`{"type":"image","data":"x"}`)}},
		}, b.messages, "a message with attachments and no text is delivered")
		assert.Equal(t, 1, b.interrupts)
	})
}

func TestBackendErrorsAnswerEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recordingBackend{fail: true, mode: "bogus"}
		e := newEnv(t, HubOptions{Backend: b})
		ext, err := e.connect(extbridgetest.Options{})
		require.NoError(t, err)
		defer ext.Close()
		assert.Equal(t, `{"type":"mode","mode":"standard"}`, string(next(t, ext).Raw), "an invalid mode is sent as standard")
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_conversations"}`)))
		assert.Equal(t, `{"type":"conversations","conversations":[]}`, string(next(t, ext).Raw))
	})
}

func TestGarbageFramesIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := extbridgetest.NewBrowser()
		ext := e.dial(extbridgetest.Options{Browser: b})
		garbage := []string{
			``, `not json`, `[]`, `[1,2]`, `"string"`, `42`, `null`, `{}`, `{"type":5}`, `{"type":""}`,
			`{"type":"from_the_future","x":1}`, `{"type":"ping"}`, `{"type":"browser_hello","token":"nope"}`,
			`{"type":"list_skills","type":"list_models"}`,
			`{"type":"user_message","content":5}`, `{"type":"browser_result","id":"nope"}`,
			`{"type":"approval_response","request_id":"nope","action":"approve"}`, `{"type":"tool_request"}`,
			`{"type":"list_models"` + strings.Repeat(" ", 10) + `,}`, `{"a":` + strings.Repeat("[", 5000) + `}`,
		}
		for _, g := range garbage {
			require.NoError(t, ext.SendRaw(t.Context(), []byte(g)))
		}
		require.NoError(t, ext.SendBinary(t.Context(), []byte{0, 1, 2}))
		// The connection is kept, and nothing was answered to the garbage.
		res, err := e.hub.Navigate(t.Context(), "https://still.example/")
		require.NoError(t, err)
		assert.Equal(t, "https://still.example/", res.URL)
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_models"}`)))
		assert.Equal(t, "models", next(t, ext).Type)
	})
}

// TestSetModeAndSelectModelAlwaysAnswered: even a set_mode or select_model
// whose value is not a string is answered (and changes nothing).
func TestSetModeAndSelectModelAlwaysAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recordingBackend{mode: ModePlan, model: "openai/gpt-4o"}
		e := newEnv(t, HubOptions{Backend: b})
		ext := e.dial(extbridgetest.Options{})
		for _, f := range []string{`{"type":"set_mode","mode":5}`, `{"type":"set_mode","Mode":"auto"}`} {
			require.NoError(t, ext.SendRaw(t.Context(), []byte(f)))
			assert.Equal(t, `{"type":"mode","mode":"plan"}`, string(next(t, ext).Raw), f)
		}
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"select_model","model":{"id":"x"}}`)))
		assert.JSONEq(t, `{"type":"models","models":["anthropic/claude-sonnet-4-5","openai/gpt-4o"],"current":"openai/gpt-4o"}`, string(next(t, ext).Raw))
		assert.Equal(t, `{"type":"mode","mode":"plan"}`, string(next(t, ext).Raw))
	})
}
