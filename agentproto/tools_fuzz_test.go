package agentproto_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
)

// fakeCaller records the commands it is sent and answers each with a
// fixed result.
type fakeCaller struct {
	sent []json.RawMessage
}

func (f *fakeCaller) Call(_ context.Context, typ string, payload any, result any) error {
	raw, ok := payload.(json.RawMessage)
	if !ok {
		return errors.New("payload is not raw JSON")
	}
	f.sent = append(f.sent, raw)
	answer := `{"ok":true}`
	if typ == agentproto.TypeTasksStart || typ == agentproto.TypeTasksWait {
		answer = `{"id":"t1","status":"done","steps":[]}`
	}
	*result.(*json.RawMessage) = json.RawMessage(answer)
	return nil
}

// FuzzCallToolArguments feeds every tool arbitrary arguments: CallTool
// must never panic, must send nothing for arguments it refuses, and what
// it sends must be JSON objects.
func FuzzCallToolArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"url":"https://x"}`, `{"index":1e308,"selector":"#a"}`, `{"text":"\ud800"}`,
		`{"direction":"up","amount":-0}`, `{"amount":1e999}`, `{"type":"auto"}`, `{"goal":"g","timeoutMs":-1}`,
		`{"goal":"g","timeoutMs":1e300}`, `{"url":"a","url":"b"}`, `{"URL":"a"}`, `[`, `null`, `"x"`,
		`{"key":"Enter","key":"Tab"}`, "{\"text\":\"\xff\"}",
	} {
		for i := range agentproto.Tools() {
			f.Add(uint8(i), []byte(seed))
		}
	}
	tools := agentproto.Tools()
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := tools[int(which)%len(tools)]
		c := &fakeCaller{}
		res, err := agentproto.CallTool(t.Context(), c, tool.Name, args, nil)
		var bad *agentproto.ToolArgumentsError
		if errors.As(err, &bad) {
			if len(c.sent) != 0 {
				t.Fatalf("%s: refused arguments %q but sent %q", tool.Name, args, c.sent)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s %q: %v", tool.Name, args, err)
		}
		if len(c.sent) == 0 || res == nil {
			t.Fatalf("%s %q: nothing sent", tool.Name, args)
		}
		for _, p := range c.sent {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(p, &obj); err != nil {
				t.Fatalf("%s %q: sent %q, not an object: %v", tool.Name, args, p, err)
			}
			if ms, ok := obj["timeoutMs"]; ok && tool.Name == "weboperator_execute_goal" {
				var n int64
				if json.Unmarshal(ms, &n) != nil || n < 1 || n > agentproto.MaxGoalTimeout.Milliseconds() {
					t.Fatalf("%s %q: sent timeoutMs %s", tool.Name, args, ms)
				}
			}
		}
	})
}
