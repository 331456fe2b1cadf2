package agentprototest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseRequestFastPathAgrees checks the reading of the host's fixed
// request form against the general parse it stands in for, and that
// anything not in that exact form takes the general parse.
func TestParseRequestFastPathAgrees(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		fast  bool
	}{
		{"host's form", `{"kind":"bridge:request","id":"42","type":"browser.click","payload":{"ref":"@e1"}}`, true},
		{"unknown type", `{"kind":"bridge:request","id":"1","type":"made.up","payload":{}}`, true},
		{"nested payload", `{"kind":"bridge:request","id":"7","type":"tasks.start","payload":{"a":{"b":"}"}}}`, true},
		{"escaped type", `{"kind":"bridge:request","id":"1","type":"browser.cl\u0069ck","payload":{}}`, false},
		{"non-digit id", `{"kind":"bridge:request","id":"x1","type":"browser.click","payload":{}}`, false},
		{"empty id", `{"kind":"bridge:request","id":"","type":"browser.click","payload":{}}`, false},
		{"other order", `{"kind":"bridge:request","type":"browser.click","id":"1","payload":{}}`, false},
		{"spaces", `{"kind": "bridge:request", "id": "1", "type": "browser.click", "payload": {}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := parseHostRequest([]byte(tt.frame))
			assert.Equal(t, tt.fast, ok)
			got, err := parseRequest([]byte(tt.frame))
			require.NoError(t, err)
			if ok {
				assert.Equal(t, got, fast)
			}
			slow := generalParse(t, tt.frame)
			assert.Equal(t, slow.ID, got.ID)
			assert.Equal(t, slow.Type, got.Type)
			assert.Equal(t, string(slow.Payload), string(got.Payload))
			assert.Equal(t, string(slow.idLit), string(got.idLit))
		})
	}
}

// generalParse parses a frame the slow way, as the fast path stands in for.
func generalParse(t *testing.T, frame string) *Request {
	t.Helper()
	prefixed := " " + frame // not the host's form, whatever it is
	r, err := parseRequest([]byte(prefixed))
	require.NoError(t, err)
	return r
}

func TestParseRequestRefusals(t *testing.T) {
	for _, frame := range []string{
		`{"kind":"bridge:hello"}`,
		`{"kind":"bridge:request","id":"1","type":"x","payload":{}`,
		`[1]`,
	} {
		_, err := parseRequest([]byte(frame))
		assert.Error(t, err, frame)
	}
}
