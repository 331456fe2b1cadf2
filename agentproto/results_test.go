package agentproto_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeDataURL(t *testing.T) {
	tests := []struct {
		name, url string
		wantType  string
		wantData  string
		wantErr   string
	}{
		{name: "jpeg", url: "data:image/jpeg;base64,QUJD", wantType: "image/jpeg", wantData: "ABC"},
		{name: "empty data", url: "data:image/png;base64,", wantType: "image/png", wantData: ""},
		{name: "line breaks ignored", url: "data:image/png;base64,QU\r\nJD", wantType: "image/png", wantData: "ABC"},
		{name: "empty", url: "", wantErr: "agentproto: malformed data URL: no data: scheme"},
		{name: "no scheme", url: "http://x/y.png", wantErr: "agentproto: malformed data URL: no data: scheme"},
		{name: "no comma", url: "data:image/png;base64", wantErr: "agentproto: malformed data URL: no comma"},
		{name: "not base64", url: "data:text/plain,hello", wantErr: "agentproto: malformed data URL: not base64"},
		{name: "bad base64", url: "data:image/png;base64,Q!JD", wantErr: "agentproto: malformed data URL: illegal base64 data at input byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shot, err := agentproto.DecodeDataURL(tt.url)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, agentproto.ErrBadDataURL)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantType, shot.MIMEType)
			assert.Equal(t, tt.wantData, string(shot.Data))
		})
	}
}

// TestScreenshotDecodesResult covers both ways Client.Screenshot reads a
// result: straight from the frame for a plain data URL, and through
// encoding/json for anything else.
func TestScreenshotDecodesResult(t *testing.T) {
	tests := []struct {
		name     string
		result   string
		wantData string
		wantErr  string
	}{
		{name: "plain", result: `{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,QUJD"}`, wantData: "ABC"},
		{name: "large", result: `{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,` + strings.Repeat("QUJD", 1<<18) + `"}`,
			wantData: strings.Repeat("ABC", 1<<18)},
		{name: "escaped slash", result: `{"kind":"screenshot","dataUrl":"data:image\/jpeg;base64,QUJD"}`, wantData: "ABC"},
		{name: "the last of two wins, as in encoding/json", result: `{"dataUrl":"data:image/jpeg;base64,eHg=","dataUrl":"data:image/jpeg;base64,QUJD"}`,
			wantData: "ABC"},
		{name: "no data URL", result: `{"kind":"screenshot"}`, wantErr: "agentproto: malformed data URL: no data: scheme"},
		{name: "data URL not a string", result: `{"dataUrl":7}`,
			wantErr: "agentproto: decoding result: json: cannot unmarshal number into Go struct field ScreenshotResult.dataUrl of type string"},
		{name: "null result", result: `null`, wantErr: "agentproto: malformed data URL: no data: scheme"},
		{name: "bad base64", result: `{"dataUrl":"data:image/png;base64,Q!JD"}`,
			wantErr: "agentproto: malformed data URL: illegal base64 data at input byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
				func(_ context.Context, r *agentprototest.Request) (any, error) {
					if r.Type != agentproto.TypeScreenshot {
						return nil, agentproto.NewUnknownRequestError(r.Type)
					}
					return json.RawMessage(tt.result), nil
				})}})
			c, err := b.Dial(t.Context(), nil)
			require.NoError(t, err)
			defer c.Close()
			shot, err := c.Screenshot(t.Context(), agentproto.ScreenshotParams{})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "image/jpeg", shot.MIMEType)
			assert.Equal(t, tt.wantData, string(shot.Data))
		})
	}
}

// TestRawResultReusesCallersMemory checks that a *json.RawMessage result
// is the caller's to keep: the client's frame buffers go back to its pool,
// so a later call must not change an earlier result.
func TestRawResultReusesCallersMemory(t *testing.T) {
	b := newBridge(t, nil) // echoes payloads
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	var first, second json.RawMessage
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"n":1}`), &first))
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"n":2}`), &second))
	assert.Equal(t, `{"n":1}`, string(first))
	assert.Equal(t, `{"n":2}`, string(second))

	reused := make(json.RawMessage, 0, 64)
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"n":3}`), &reused))
	assert.Equal(t, `{"n":3}`, string(reused))
	assert.Equal(t, 64, cap(reused), "a large enough RawMessage is reused, as encoding/json does")
}

func TestNilRawPayloadSendsNone(t *testing.T) {
	b := newBridge(t, nil) // echoes payloads; a missing one reaches the extension as {}
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	for _, payload := range []any{nil, json.RawMessage(nil), []byte(nil)} {
		var res json.RawMessage
		require.NoError(t, c.Call(t.Context(), agentproto.TypeSnapshot, payload, &res), "%T", payload)
		assert.Equal(t, `{}`, string(res), "%T", payload)
	}
	err = c.Call(t.Context(), agentproto.TypeSnapshot, json.RawMessage(`{"a":`), nil)
	assert.ErrorContains(t, err, "payload is not valid JSON")
}
