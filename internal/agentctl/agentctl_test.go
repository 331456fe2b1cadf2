package agentctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/internal/agentctl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func run(t *testing.T, b *agentprototest.Bridge, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	io := agentctl.IO{
		Getenv: func(string) string { return "" },
		Stdout: &stdout, Stderr: &stderr,
		Dial: func(ctx context.Context, _ string, opts *agentproto.ClientOptions) (*agentproto.Client, error) {
			return b.Dial(ctx, opts)
		},
	}
	code := agentctl.Run(t.Context(), args, io)
	return code, stdout.String(), stderr.String()
}

func TestRawRequest(t *testing.T) {
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			if r.Type == "browser.fail" {
				return nil, errString("it broke")
			}
			r.Ext().Emit(map[string]any{"kind": "task:update", "task": map[string]string{"id": "t"}})
			return json.RawMessage(`{"ok":true}`), nil
		})}})
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))

	code, out, errOut := run(t, b, "-require-same-user=false", `{"type":"bridge.health"}`)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "{\n  \"ok\": true,\n  \"bridge\": \"online\",\n  \"extension\": \"online\",\n  \"authRequired\": false\n}\n", out)

	code, out, errOut = run(t, b, "-require-same-user=false", `{"type":"browser.click","payload":{"ref":"@e1"}}`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "{\n  \"ok\": true\n}\n", out)
	assert.Contains(t, errOut, `{"kind":"task:update","task":{"id":"t"}}`+"\n", "events as JSON lines on stderr")

	code, out, errOut = run(t, b, "-require-same-user=false", `{"type":"browser.fail"}`)
	assert.Equal(t, 1, code, "an error reply exits non-zero")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "it broke")

	code, _, _ = run(t, b, "-require-same-user=false", `{"type":`)
	assert.Equal(t, 2, code)
}

func TestTypedCommands(t *testing.T) {
	b := agentprototest.NewBridge(nil) // echoes payloads
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	code, out, errOut := run(t, b, "-require-same-user=false", "-tab", "3", "type", "-submit", "@e4", "hello")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"ok": false`) // the echoed payload decoded as an action result
	code, _, _ = run(t, b, "-require-same-user=false", "click")
	assert.Equal(t, 2, code, "missing REF is a usage error")
	code, _, _ = run(t, b, "-require-same-user=false", "fly")
	assert.Equal(t, 2, code)
}

type errString string

func (e errString) Error() string { return string(e) }
