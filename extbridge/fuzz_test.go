package extbridge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// FuzzInboundFrame checks that any frame from the extension decodes without
// panicking, that what decodes is consistent (its type matches, strict
// rules held), and that a decoded frame re-encodes to one that decodes to
// the same value.
func FuzzInboundFrame(f *testing.F) {
	seeds := []string{
		`{"type":"browser_hello","token":"t","extension_version":"1.9.2"}`,
		`{"type":"browser_result","id":"x","url":"u","title":"t","content":null,"events":[],"error":""}`,
		`{"type":"browser_result","id":"x","image":"aGk=","image_mime_type":"image/png"}`,
		`{"type":"browser_result","id":"x","tabs":[{"index":0,"url":"u","title":"t","active":true}]}`,
		`{"type":"browser_result","id":"x","tabs":"bad"}`,
		`{"type":"browser_result","id":"x","content":"caf\u00e9 \"q\" \ud83d\ude00","title":"\u00ff","url":null,"events":[1, {"a":2}]}`,
		`{"type":"list_conversations"}`, `{"type":"resume_conversation","id":"abc"}`, `{"type":"new_session"}`,
		`{"type":"user_message","content":"hi","attachments":[{"x":1}]}`, `{"type":"interrupt"}`,
		`{"type":"list_history"}`, `{"type":"list_skills"}`, `{"type":"list_models"}`,
		`{"type":"select_model","model":"a/b"}`, `{"type":"set_mode","mode":"auto"}`,
		`{"type":"approval_response","request_id":"r","action":"approve"}`,
		`{"type":"tool_request","id":"t","tool_name":"Bash","tool_args":"{}"}`, `{"type":"ping"}`,
		`{"type":"tool_request","id":"t","tool_args":{"command":"ls"}}`, `{"type":"set_mode","mode":5}`,
		`{"type":"future","x":[1,{"y":null}]}`, `{"type":"a","type":"b"}`, `{"type":"set_mode","Mode":"auto"}`,
		`[]`, `null`, `"x"`, `{`, `{"type":1}`, "{\"type\":\"\\u0070ing\"}",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, frame, err := decodeInbound(data)
		if err != nil {
			if frame != nil {
				t.Fatalf("error %v with a frame", err)
			}
			return
		}
		if typ == "" {
			t.Fatal("accepted a frame without type")
		}
		// A result or tool request whose id is readable is accepted with
		// its decoding error (invalid UTF-8 included), so that its command
		// fails or its request is answered instead of waiting: that is
		// the documented behaviour, checked before the strict-JSON oracle.
		switch fr := frame.(type) {
		case *resultFrame:
			if fr.decodeErr != nil {
				if fr.ID == "" {
					t.Fatal("malformed result without id")
				}
				return
			}
		case *toolRequestFrame:
			if fr.decodeErr != nil {
				if fr.ID == "" {
					t.Fatal("malformed tool request without id")
				}
				return
			}
		}
		if strictjson.Check(data) != nil {
			t.Fatalf("accepted a frame strictjson refuses, with no decoding error: %q", data)
		}
		if frame == nil {
			return // unknown type: ignored
		}
		if rf, ok := frame.(*resultFrame); ok {
			// The one-walk decoder agrees with decoding the whole frame.
			var ref resultFrame
			if strictjson.Unmarshal(data, &ref) == nil {
				got := *rf
				got.raw, ref.raw = nil, nil
				if len(got.Events) == 0 && len(ref.Events) == 0 {
					got.Events, ref.Events = nil, nil
				}
				if !reflect.DeepEqual(got, ref) {
					t.Fatalf("result decoded as %+v, encoding/json says %+v", got, ref)
				}
			}
		}
		if !utf8.ValidString(typ) {
			return
		}
		again, err := json.Marshal(frame)
		if err != nil {
			t.Fatalf("re-encoding %T: %v", frame, err)
		}
		typ2, frame2, err := decodeInbound(again)
		if err != nil || typ2 != typ {
			t.Fatalf("re-decoding %s: %v (%s)", again, err, typ2)
		}
		if rf, ok := frame2.(*resultFrame); ok {
			rf.raw = frame.(*resultFrame).raw
		}
		b1, _ := json.Marshal(frame)
		b2, _ := json.Marshal(frame2)
		if string(b1) != string(b2) {
			t.Fatalf("round trip changed the frame:\n%s\n%s", b1, b2)
		}
	})
}

// FuzzInputHistoryFile checks the history file parser: no panic, and the
// entries it loads obey the Add rules.
func FuzzInputHistoryFile(f *testing.F) {
	f.Add([]byte("\"a\"\n\"b\\nc\"\n\"b\\nc\"\nnot json\n"))
	f.Add([]byte("\"  \"\n{}\n42\n\"x\""))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _ := parseHistory(data)
		if len(entries) > maxHistoryEntries {
			t.Fatalf("%d entries", len(entries))
		}
		for i, e := range entries {
			if e == "" || e != strings.TrimSpace(e) || len(e) > maxHistoryEntryBytes {
				t.Fatalf("entry %q breaks the rules", e)
			}
			if i > 0 && entries[i-1] == e {
				t.Fatalf("consecutive duplicate %q", e)
			}
		}
	})
}

// FuzzOrigin checks the origin parser: accepted origins are exactly an
// extension scheme followed by a well-formed id.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{"chrome-extension://abcdefghijklmnopabcdefghijklmnop", "moz-extension://0b5a-44", "null", "https://x", "CHROME-EXTENSION://a", "chrome-extension://a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		id, ok := extensionID(origin)
		if !ok {
			return
		}
		if !validExtensionID(id) || !strings.HasSuffix(origin, id) || strings.ContainsAny(id, "/:?#@ ") {
			t.Fatalf("accepted %q with id %q", origin, id)
		}
	})
}
