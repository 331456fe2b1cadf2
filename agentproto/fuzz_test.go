package agentproto_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
)

// FuzzRequest feeds the server's request decoder arbitrary frames: it must
// never panic, must accept only JSON objects, and what it accepts must
// agree with encoding/json on the members it reads.
func FuzzRequest(f *testing.F) {
	for _, seed := range []string{
		`{"id":"req-1","type":"browser.snapshot","payload":{},"timeoutMs":30000,"token":"t"}`,
		`{"id":7,"type":"bridge.health"}`,
		`{"type":"x","payload":[1],"timeoutMs":-5}`,
		`{"type":"x","timeoutMs":1.5e3,"token":123}`,
		`{"Token":"a","token":"b","t\u006fken":"c"}`,
		`{"id":null,"type":""}`,
		`[1,2]`, `"str"`, `{`, `{"a":}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		`{"payload":{"a":{"b":{"c":[[[[[]]]]]}}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := agentproto.ParseRequest(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatalf("accepted a non-object %q: %v", data, err)
		}
		if !json.Valid(req.Payload) || req.Payload[0] != '{' {
			t.Fatalf("payload %q is not an object", req.Payload)
		}
		if req.ID != nil && !json.Valid(req.ID) {
			t.Fatalf("id %q is not JSON", req.ID)
		}
		if req.Token != "" {
			var tok string
			if json.Unmarshal(obj["token"], &tok) != nil || tok != req.Token {
				t.Fatalf("token %q does not match the exact key's string %q", req.Token, obj["token"])
			}
		}
		if req.TimeoutMs < 0 {
			t.Fatalf("negative timeout %d", req.TimeoutMs)
		}
	})
}
