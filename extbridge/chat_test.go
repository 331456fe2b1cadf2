package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestEventConstructors(t *testing.T) {
	state, err := StateSnapshot(map[string]int{"n": 1})
	require.NoError(t, err)
	msgs, err := MessagesSnapshot([]map[string]string{{"role": "user", "content": "hi"}})
	require.NoError(t, err)
	custom, err := Custom("progress", 0.5)
	require.NoError(t, err)
	tests := []struct {
		e    ChatEvent
		want string
	}{
		{RunStarted("t", "r"), `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`},
		{RunFinished("t", "r"), `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`},
		{RunError("bad", ""), `{"type":"RUN_ERROR","message":"bad"}`},
		{TextMessageStart("m", "assistant"), `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`},
		{TextMessageContent("m", "a \"quoted\" <b>"), `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a \"quoted\" \u003cb\u003e"}`},
		{TextMessageEnd("m"), `{"type":"TEXT_MESSAGE_END","messageId":"m"}`},
		{ToolCallStart("c", "Bash", "m"), `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"Bash","parentMessageId":"m"}`},
		{ToolCallArgs("c", `{"a"`), `{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\"a\""}`},
		{ToolCallEnd("c"), `{"type":"TOOL_CALL_END","toolCallId":"c"}`},
		{ToolCallResult("m2", "c", "ok"), `{"type":"TOOL_CALL_RESULT","messageId":"m2","toolCallId":"c","content":"ok","role":"tool"}`},
		{state, `{"type":"STATE_SNAPSHOT","snapshot":{"n":1}}`},
		{msgs, `{"type":"MESSAGES_SNAPSHOT","messages":[{"content":"hi","role":"user"}]}`},
		{custom, `{"type":"CUSTOM","name":"progress","value":0.5}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.e.Type()), func(t *testing.T) {
			b, err := json.Marshal(tt.e)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
		})
	}
	_, err = StateSnapshot(func() {})
	assert.ErrorIs(t, err, ErrInvalidEvent)
}

func TestNewChatEvent(t *testing.T) {
	tests := []struct {
		raw  string
		ok   bool
		want string
	}{
		{`{"type":"CUSTOM_THING","x": [1, 2]}`, true, `{"type":"CUSTOM_THING","x":[1,2]}`},
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`, true, ""},
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`, false, ""},
		{`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m"}`, false, ""},
		{`{"type":""}`, false, ""},
		{`{"type":1}`, false, ""},
		{`{"x":1}`, false, ""},
		{`[1]`, false, ""},
		{`{"type":"A","type":"B"}`, false, ""},
		{`nope`, false, ""},
	}
	for _, tt := range tests {
		e, err := NewChatEvent(json.RawMessage(tt.raw))
		if !tt.ok {
			assert.ErrorIs(t, err, ErrInvalidEvent, tt.raw)
			continue
		}
		require.NoError(t, err, tt.raw)
		if tt.want != "" {
			assert.Equal(t, tt.want, e.String())
		}
	}
}

func TestEmitInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		assert.NoError(t, e.hub.Emit(t.Context(), RunStarted("t", "r")), "no extension: dropped")
		ext := e.dial(extbridgetest.Options{})
		const n = 1000 // more than the send queue
		go func() {
			for i := range n {
				if err := e.hub.Emit(t.Context(), TextMessageContent("m", strconv.Itoa(i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for i := range n {
			var f struct {
				Type  string
				Event struct{ Type, Delta string }
			}
			require.NoError(t, next(t, ext).Decode(&f))
			assert.Equal(t, "chat_event", f.Type)
			assert.Equal(t, strconv.Itoa(i), f.Event.Delta)
		}
		assert.ErrorIs(t, e.hub.Emit(t.Context(), TextMessageContent("m", "")), ErrInvalidEvent)
		assert.ErrorIs(t, e.hub.Emit(t.Context(), ChatEvent{}), ErrInvalidEvent)
	})
}

func chatTypes(t *testing.T, ext *extbridgetest.Extension, n int) []string {
	t.Helper()
	var types []string
	for range n {
		f := next(t, ext)
		if f.Type != "chat_event" {
			types = append(types, f.Type)
			continue
		}
		var ev struct{ Event struct{ Type string } }
		require.NoError(t, f.Decode(&ev))
		types = append(types, ev.Event.Type)
	}
	return types
}

func TestRunTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})

		err := e.hub.RunTurn(t.Context(), "thread", "run1", func(ctx context.Context, turn *Turn) error {
			return turn.Say(ctx, "m1", "hello")
		})
		require.NoError(t, err)
		assert.Equal(t, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}, chatTypes(t, ext, 5))

		err = e.hub.RunTurn(t.Context(), "thread", "run2", func(ctx context.Context, turn *Turn) error {
			return errors.New("model unavailable")
		})
		assert.EqualError(t, err, "model unavailable")
		assert.Equal(t, []string{"RUN_STARTED", "RUN_ERROR"}, chatTypes(t, ext, 2))

		// Interrupted from the panel, mid tool call.
		errc := make(chan error, 1)
		go func() {
			errc <- e.hub.RunTurn(t.Context(), "thread", "run3", func(ctx context.Context, turn *Turn) error {
				if err := turn.Emit(ctx, ToolCallStart("c1", "Bash", "")); err != nil {
					return err
				}
				<-ctx.Done()
				return ctx.Err()
			})
		}()
		assert.Equal(t, []string{"RUN_STARTED", "TOOL_CALL_START"}, chatTypes(t, ext, 2))
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"interrupt"}`)))
		assert.ErrorIs(t, <-errc, context.Canceled)
		assert.Equal(t, []string{"RUN_FINISHED", "interrupted"}, chatTypes(t, ext, 2))

		// Cancelled from the terminal side (the caller's context).
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			errc <- e.hub.RunTurn(ctx, "thread", "run4", func(ctx context.Context, turn *Turn) error {
				<-ctx.Done()
				return nil // even when fn swallows the cancellation
			})
		}()
		assert.Equal(t, []string{"RUN_STARTED"}, chatTypes(t, ext, 1))
		cancel()
		assert.NoError(t, <-errc)
		assert.Equal(t, []string{"RUN_FINISHED", "interrupted"}, chatTypes(t, ext, 2))
	})
}
