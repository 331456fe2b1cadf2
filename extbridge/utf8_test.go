package extbridge

import (
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// The module's rule: JSON text that is not valid UTF-8 is refused, never
// repaired to U+FFFD.
func TestInvalidUTF8Refused(t *testing.T) {
	t.Run("hello", func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ws, _, err := e.dialRaw(extbridgetest.Options{})
		require.NoError(t, err)
		defer ws.CloseNow()
		hello := []byte(`{"type":"browser_hello","token":"` + testToken + "\",\"extension_version\":\"1.0\xff\"}")
		require.NoError(t, ws.Write(t.Context(), websocket.MessageText, hello))
		_, _, err = ws.Read(t.Context())
		assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err))
		var ce websocket.CloseError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "browser_hello is not valid UTF-8", ce.Reason)
		assert.False(t, e.hub.Connected())
	})

	t.Run("user message", func(t *testing.T) {
		b := &recordingBackend{active: "a"}
		e := newEnv(t, HubOptions{Backend: b})
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, ext.SendRaw(t.Context(), []byte("{\"type\":\"user_message\",\"content\":\"caf\xe9\"}")))
		require.NoError(t, ext.UserMessage(t.Context(), "café"))
		// The frames are handled in order: once list_skills is answered,
		// both messages have been seen.
		_, err := ext.Request(t.Context(), "list_skills", "skills")
		require.NoError(t, err)
		b.mu.Lock()
		defer b.mu.Unlock()
		require.Len(t, b.messages, 1, "the invalid message is refused, the connection stays")
		assert.Equal(t, "café", b.messages[0].Content)
	})

	t.Run("browser result fails its command", func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		errc, cmd := readInFlight(t, e, ext)
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"browser_result","id":"`+cmd.ID+"\",\"content\":\"\xc3(\"}")))
		err := <-errc
		require.ErrorIs(t, err, ErrInvalidResult)
		assert.Contains(t, err.Error(), "not valid UTF-8")
		assert.True(t, e.hub.Connected())
	})

	t.Run("tool request gets a failed result", func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash})
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, ext.SendRaw(t.Context(), []byte("{\"type\":\"tool_request\",\"id\":\"t1\",\"tool_name\":\"Bash\",\"tool_args\":\"\xff\"}")))
		r := nextToolResult(t, ext)
		assert.Equal(t, "t1", r.ID)
		assert.False(t, r.Success)
		assert.Contains(t, r.Error, "not valid UTF-8")
	})
}

func FuzzDecodeInboundUTF8(f *testing.F) {
	f.Add([]byte("{\"type\":\"browser_result\",\"id\":\"a\xff\"}"))
	f.Add([]byte("{\"type\":\"tool_request\",\"id\":\"a\",\"x\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, frame, err := decodeInbound(data)
		_ = typ
		if err == nil && frame != nil {
			switch fr := frame.(type) {
			case *resultFrame:
				if fr.decodeErr == nil {
					assert.True(t, validUTF8(data))
				}
			case *toolRequestFrame:
				if fr.decodeErr == nil {
					assert.True(t, validUTF8(data))
				}
			default:
				assert.True(t, validUTF8(data))
			}
		}
	})
}

func validUTF8(b []byte) bool { return utf8.Valid(b) }
