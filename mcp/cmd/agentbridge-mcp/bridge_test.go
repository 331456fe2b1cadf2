package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bridgeToken = "bridge-test-token"

// fakeJPEG is what the WebOperator extension's screenshots look like (JPEG data
// URLs); the bytes need not be a whole image.
var fakeJPEG = []byte("\xff\xd8\xff\xe0fake-jpeg")

// standIn is agentprototest's stand-in extension scripted with the answers of
// the WebOperator extension, recording each command's payload.
type standIn struct {
	mu       sync.Mutex
	payloads map[string]json.RawMessage
	// waitGate, when set, holds tasks.wait until it is closed or the
	// request's context ends; waiting is signalled on waiting.
	waitGate chan struct{}
	waiting  chan struct{}
	// stopped is signalled on each tasks.stop.
	stopped chan struct{}
	// beforeWait, when set, runs as tasks.wait arrives (to emit events).
	beforeWait func() error
}

func newStandIn() *standIn {
	return &standIn{payloads: map[string]json.RawMessage{}, waiting: make(chan struct{}, 1), stopped: make(chan struct{}, 1)}
}

func (s *standIn) payload(typ string) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.payloads[typ]
}

func (s *standIn) handler() agentprototest.Handler {
	action := map[string]any{"kind": "action:result", "result": map[string]any{"ok": true, "durationMs": 3}}
	answers := map[string]any{
		agentproto.TypeSnapshot: map[string]any{"kind": "snapshot", "snapshot": map[string]any{
			"url": "https://example.com/", "title": "Example", "nodes": []any{
				map[string]any{"ref": "@e1", "role": "link", "name": "More information"}}}},
		agentproto.TypeScreenshot: map[string]any{"kind": "screenshot", "dataUrl": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(fakeJPEG)},
		agentproto.TypeNavigate:   map[string]any{"ok": true, "tabId": 7, "url": "https://example.com/", "title": "Example"},
		agentproto.TypeClick:      action,
		agentproto.TypeText:       action,
		agentproto.TypePress:      action,
		agentproto.TypeScroll:     action,
		agentproto.TypeExtract:    map[string]any{"kind": "action:result", "result": map[string]any{"ok": true, "extracted": []any{map[string]any{"ref": "@e1", "text": "Example Domain"}}}},
		tools.TypeSolveCaptcha:    map[string]any{"ok": false, "reason": "no captcha found"},
		agentproto.TypeTasksStart: map[string]any{"id": "task-1", "goal": "read the title", "status": "idle"},
		agentproto.TypeTasksWait: map[string]any{"id": "task-1", "goal": "read the title", "status": "done", "steps": []any{
			map[string]any{"id": "s1", "index": 0, "status": "ok", "toolCall": map[string]any{"name": "done", "arguments": map[string]any{"answer": "The title is Example"}}}}},
	}
	return agentprototest.HandlerFunc(func(ctx context.Context, r *agentprototest.Request) (any, error) {
		s.mu.Lock()
		s.payloads[r.Type] = append(json.RawMessage(nil), r.Payload...)
		gate := s.waitGate
		s.mu.Unlock()
		if r.Type == agentproto.TypeTasksStop {
			select {
			case s.stopped <- struct{}{}:
			default:
			}
			return map[string]any{"ok": true}, nil
		}
		if r.Type == agentproto.TypeTasksWait && s.beforeWait != nil {
			if err := s.beforeWait(); err != nil {
				return nil, err
			}
		}
		if r.Type == agentproto.TypeTasksWait && gate != nil {
			s.waiting <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if a, ok := answers[r.Type]; ok {
			return a, nil
		}
		return agentprototest.Mux{}.ServeRequest(ctx, r)
	})
}

// startBridge runs a whole bridge (agent socket server, native messaging
// host, stand-in extension) with the agent socket on a real Unix socket at
// path.
func startBridge(t *testing.T, path string, ext *standIn, opts *agentprototest.BridgeOptions) *agentprototest.Bridge {
	t.Helper()
	if opts == nil {
		opts = &agentprototest.BridgeOptions{}
	}
	opts.Extension.Handler = ext.handler()
	return serveBridge(t, path, opts)
}

// serveBridge runs the bridge opts describe (its token bridgeToken unless
// set) on a real Unix socket at path until tb ends, and waits for the
// extension's hello unless opts says it sends none.
func serveBridge(tb testing.TB, path string, opts *agentprototest.BridgeOptions) *agentprototest.Bridge {
	tb.Helper()
	if opts.Server.Token == "" {
		opts.Server.Token = bridgeToken
	}
	b := agentprototest.NewBridge(opts)
	ln, err := bridge.ListenUnix(tb.Context(), path)
	require.NoError(tb, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		b.Server.Serve(ln)
	}()
	tb.Cleanup(func() {
		b.Close()
		<-served
	})
	if !opts.Extension.NoHello {
		require.NoError(tb, b.WaitOnline(tb.Context()))
	}
	return b
}

func socketPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "bridge.sock")
}

func bridgeEnv(path, token string) []string {
	return []string{"WEBOPERATOR_AGENT_SOCKET=" + path, agentproto.EnvToken + "=" + token}
}

func TestBridgeTools(t *testing.T) {
	path := socketPath(t)
	ext := newStandIn()
	startBridge(t, path, ext, nil)
	var mu sync.Mutex
	var progress []string
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Message)
		mu.Unlock()
	}}
	transports(t, bridgeEnv(path, bridgeToken), nil, opts, func(t *testing.T, cs *mcp.ClientSession) {
		listed := toolNames(t, cs)
		catalogue := tools.List()
		require.Len(t, listed, len(catalogue), "the bridge alone by default")
		for _, want := range catalogue {
			got := listed[want.Name]
			require.NotNil(t, got, want.Name)
			assert.Equal(t, want.Description, got.Description)
			assert.JSONEq(t, string(want.InputSchema), mustJSON(t, got.InputSchema), want.Name)
		}

		res := call(t, cs, tools.BrowserSnapshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), `"ref": "@e1"`)

		res = call(t, cs, tools.BrowserNavigate, map[string]any{"url": "https://example.com/"})
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), "Example")
		assert.JSONEq(t, `{"url":"https://example.com/"}`, string(ext.payload(agentproto.TypeNavigate)))

		res = call(t, cs, tools.BrowserClick, map[string]any{"index": 3})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"index":3}`, string(ext.payload(agentproto.TypeClick)))

		res = call(t, cs, tools.BrowserType, map[string]any{"selector": "#q", "text": "hello", "clear": true})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"selector":"#q","text":"hello","clear":true}`, string(ext.payload(agentproto.TypeText)))

		res = call(t, cs, tools.BrowserPress, map[string]any{"key": "Enter"})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"key":"Enter"}`, string(ext.payload(agentproto.TypePress)))

		res = call(t, cs, tools.BrowserScroll, map[string]any{})
		require.False(t, res.IsError, text(res))
		assert.JSONEq(t, `{"direction":"down","amount":500,"amountPx":500}`, string(ext.payload(agentproto.TypeScroll)))

		res = call(t, cs, tools.BrowserExtract, map[string]any{"instruction": "the heading"})
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), "Example Domain")

		res = call(t, cs, tools.BrowserSolveCaptcha, map[string]any{"type": "auto"})
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), "no captcha found")
		assert.JSONEq(t, `{}`, string(ext.payload(tools.TypeSolveCaptcha)))

		// Screenshots are image content with the data URL's MIME type.
		res = call(t, cs, tools.BrowserScreenshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		require.NotEmpty(t, res.Content)
		img, ok := res.Content[0].(*mcp.ImageContent)
		require.True(t, ok, "%#v", res.Content[0])
		assert.Equal(t, "image/jpeg", img.MIMEType)
		assert.Equal(t, fakeJPEG, img.Data)

		// The goal: tasks.start then tasks.wait, with progress.
		params := &mcp.CallToolParams{Name: tools.ExecuteGoal, Arguments: map[string]any{"goal": "read the title", "timeoutMs": 5000}}
		params.SetProgressToken("goal-1")
		res, err := cs.CallTool(t.Context(), params)
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), "The title is Example")
		assert.JSONEq(t, `{"id":"task-1","timeoutMs":5000}`, string(ext.payload(agentproto.TypeTasksWait)))
		mu.Lock()
		assert.Contains(t, progress, "Task task-1 started; waiting up to 5s for it to finish")
		progress = nil
		mu.Unlock()

		// Arguments that fail the schema are refused before anything is sent.
		for _, bad := range []map[string]any{{}, {"url": 42}, {"url": "https://a.example/", "tabId": 1}} {
			res = call(t, cs, tools.BrowserNavigate, bad)
			assert.True(t, res.IsError, "%v", bad)
			assert.Contains(t, text(res), "invalid arguments for browser_navigate")
		}
		assert.JSONEq(t, `{"url":"https://example.com/"}`, string(ext.payload(agentproto.TypeNavigate)), "nothing more was sent")

		// An unknown tool is a protocol error.
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "browser_fly", Arguments: map[string]any{}})
		assert.ErrorContains(t, err, `unknown tool "browser_fly"`)
	})
}

func TestBridgeErrors(t *testing.T) {
	t.Run("socket missing, then the bridge comes up", func(t *testing.T) {
		path := socketPath(t)
		cs, _ := startStdio(t, nil, bridgeEnv(path, bridgeToken))
		res := call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "the WebOperator bridge socket is not reachable at "+path)

		startBridge(t, path, newStandIn(), nil)
		res = call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.False(t, res.IsError, text(res))
	})
	t.Run("bridge restarts", func(t *testing.T) {
		path := socketPath(t)
		b := startBridge(t, path, newStandIn(), nil)
		cs, _ := startStdio(t, nil, bridgeEnv(path, bridgeToken))
		res := call(t, cs, tools.BrowserSnapshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		b.Close()
		res = call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.True(t, res.IsError, "the bridge is gone: %s", text(res))
		startBridge(t, path, newStandIn(), nil)
		res = call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.False(t, res.IsError, text(res))
	})
	t.Run("extension offline", func(t *testing.T) {
		path := socketPath(t)
		startBridge(t, path, newStandIn(), &agentprototest.BridgeOptions{Extension: agentprototest.Options{NoHello: true}})
		cs, _ := startStdio(t, nil, bridgeEnv(path, bridgeToken))
		res := call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.True(t, res.IsError)
		assert.Equal(t, agentproto.MsgExtensionOffline, text(res))
	})
	t.Run("unauthorized", func(t *testing.T) {
		path := socketPath(t)
		startBridge(t, path, newStandIn(), nil)
		cs, _ := startStdio(t, nil, bridgeEnv(path, "wrong-token"))
		res := call(t, cs, tools.BrowserSnapshot, map[string]any{})
		assert.True(t, res.IsError)
		assert.Equal(t, agentproto.MsgUnauthorized, text(res))
	})
}
