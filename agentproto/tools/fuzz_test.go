package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/agentbridge/agentbridge/agentproto/tools"
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

// FuzzCallToolArguments feeds every tool arbitrary arguments: Call
// must never panic, must send nothing for arguments it refuses, and what
// it sends must be JSON objects.
func FuzzCallToolArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"url":"https://x"}`, `{"index":1e308,"selector":"#a"}`, `{"text":"\ud800"}`,
		`{"direction":"up","amount":-0}`, `{"amount":1e999}`, `{"type":"auto"}`, `{"goal":"g","timeoutMs":-1}`,
		`{"goal":"g","timeoutMs":1e300}`, `{"url":"a","url":"b"}`, `{"URL":"a"}`, `[`, `null`, `"x"`,
		`{"key":"Enter","key":"Tab"}`, "{\"text\":\"\xff\"}",
	} {
		for i := range tools.List() {
			f.Add(uint8(i), []byte(seed))
		}
	}
	list := tools.List()
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		tool := list[int(which)%len(list)]
		c := &fakeCaller{}
		res, err := tools.Call(t.Context(), c, tool.Name, args, nil)
		var bad *tools.ArgumentsError
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
				if json.Unmarshal(ms, &n) != nil || n < 1 || n > tools.DefaultMaxGoalTimeout.Milliseconds() {
					t.Fatalf("%s %q: sent timeoutMs %s", tool.Name, args, ms)
				}
			}
		}
	})
}

// FuzzHTTPToolCall feeds POST /v1/tools/call arbitrary bodies: the handler
// must never panic, must answer JSON with a known status, and a request it
// refuses must not reach the extension.
func FuzzHTTPToolCall(f *testing.F) {
	for _, seed := range []string{
		`{"tool":"browser_snapshot"}`, `{"name":"browser_press","parameters":{"key":"Tab"}}`,
		`{"tool":"browser_navigate","arguments":{"url":7}}`, `{"tool":"browser_fly"}`, `{"tool":5}`,
		`{"tool":"browser_scroll","payload":{"direction":"up"},"timeoutMs":"x"}`, `{"tool":"a","tool":"b"}`,
		`{"tool":"browser_type","arguments":{"text":"x","TEXT":"y"}}`, `[]`, `{`, ``, `null`,
		`{"tool":"browser_extract","arguments":null,"parameters":{"selector":"main"}}`,
	} {
		f.Add([]byte(seed))
	}
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "tok"}})
	defer b.Close()
	if err := b.WaitOnline(context.Background()); err != nil {
		f.Fatal(err)
	}
	h := httpapi.NewHandler(b.Server, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := b.Extension.Received()
		req := httptest.NewRequest("POST", "http://127.0.0.1:8765/v1/tools/call", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q: answer is not JSON: %q", body, rec.Body.Bytes())
		}
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if b.Extension.Received() != before {
				t.Fatalf("%q: refused with %d but forwarded", body, rec.Code)
			}
		case http.StatusInternalServerError: // the echo extension's answer did not decode, or the like
		default:
			t.Fatalf("%q: status %d: %s", body, rec.Code, rec.Body.Bytes())
		}
	})
}
