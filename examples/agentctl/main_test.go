package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runCtl runs agentctl against b (nil: a Dial that fails the test, for
// commands that must be refused before dialing).
func runCtl(ctx context.Context, t *testing.T, b *agentprototest.Bridge, args ...string) (int, string, string) {
	var stdout, stderr syncbuf.Buffer
	e := env{
		Getenv: func(string) string { return "" },
		Stdout: &stdout, Stderr: &stderr,
		Dial: func(ctx context.Context, _ string, opts *agentproto.ClientOptions) (*agentproto.Client, error) {
			if b == nil {
				t.Errorf("agentctl %q dialed the bridge", args)
				return nil, context.Canceled
			}
			return b.Dial(ctx, opts)
		},
	}
	code := run(ctx, args, e)
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

	code, out, errOut := runCtl(t.Context(), t, b, `{"type":"bridge.health"}`)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "{\n  \"ok\": true,\n  \"bridge\": \"online\",\n  \"extension\": \"online\",\n  \"authRequired\": false\n}\n", out)

	code, out, errOut = runCtl(t.Context(), t, b, `{"type":"browser.click","payload":{"ref":"@e1"}}`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "{\n  \"ok\": true\n}\n", out)
	assert.Contains(t, errOut, `{"kind":"task:update","task":{"id":"t"}}`+"\n", "events as JSON lines on stderr")

	code, out, errOut = runCtl(t.Context(), t, b, `{"type":"browser.fail"}`)
	assert.Equal(t, 1, code, "an error reply exits non-zero")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "it broke")

	code, _, _ = runCtl(t.Context(), t, nil, `{"type":`)
	assert.Equal(t, 2, code)
}

// recorded is one request the stand-in extension received.
type recorded struct {
	Type    string
	Payload json.RawMessage
}

// recordingBridge answers every command with a plausible result of its
// type and records what it received.
func recordingBridge(t *testing.T) (*agentprototest.Bridge, func() []recorded) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	var mu sync.Mutex
	var got []recorded
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			mu.Lock()
			got = append(got, recorded{r.Type, append(json.RawMessage(nil), r.Payload...)})
			mu.Unlock()
			switch r.Type {
			case agentproto.TypeNavigate:
				return json.RawMessage(`{"ok":true,"tabId":1,"url":"https://example.com/"}`), nil
			case agentproto.TypeSnapshot:
				return json.RawMessage(`{"kind":"snapshot","snapshot":{"url":"u","title":"t","viewport":{"w":1,"h":1,"scrollX":0,"scrollY":0},"nodes":[],"domHash":"h","takenAt":1}}`), nil
			case agentproto.TypeScreenshot:
				return map[string]string{"kind": "screenshot", "dataUrl": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}, nil
			case agentproto.TypeTasksList:
				return json.RawMessage(`[]`), nil
			case agentproto.TypeTasksGet, agentproto.TypeTasksStart, agentproto.TypeTasksWait:
				return json.RawMessage(`{"id":"t1","goal":"g","status":"done","steps":[]}`), nil
			case agentproto.TypeTasksStop, agentproto.TypeTasksPause, agentproto.TypeTasksResume, agentproto.TypeTasksConfirm:
				return json.RawMessage(`{"ok":true}`), nil
			}
			return json.RawMessage(`{"kind":"action:result","result":{"ok":true,"durationMs":1}}`), nil
		})}})
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.WaitOnline(t.Context()))
	return b, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

// argsFromUsage turns a usage line into a command line, in the line's own
// order (flags after arguments, as the line shows them): optional parts
// are included, the first of alternatives is taken, and placeholders get
// sample values.
func argsFromUsage(t *testing.T, usage string, samples map[string]string) []string {
	clean := strings.NewReplacer("[", "", "]", "", "...", "").Replace(usage)
	var args []string
	for _, word := range strings.Fields(clean) {
		word, _, _ = strings.Cut(word, "|")
		if v, ok := samples[word]; ok {
			args = append(args, v)
			continue
		}
		require.Equal(t, strings.ToLower(word), word, "placeholder %s in %q has no sample", word, usage)
		args = append(args, word)
	}
	return args
}

// Issue 11, item 6: every usage line works as written, with the flags
// after the arguments.
func TestEveryUsageLineWorksAsWritten(t *testing.T) {
	dir := t.TempDir()
	attachment := filepath.Join(dir, "doc.txt")
	samples := map[string]string{
		"URL": "https://example.com/", "REF": "@e1", "TEXT": "hello world", "KEY": "Tab", "PX": "120",
		"REFS": "@e1,@e2", "FILE": filepath.Join(dir, "out.png"), "ID": "t1", "GOAL": "find the price",
		"ID=PATH": "a1=" + attachment, "DURATION": "2s", "NAME": "browser_scroll", "ARGUMENTS_JSON": `{"direction":"up"}`,
	}
	type want struct {
		typ, payload string // "" type: nothing reaches the extension
		stdout       string // a substring of the output
	}
	wants := map[string]want{
		"health":        {stdout: `"bridge": "online"`},
		"navigate":      {typ: "browser.navigate", payload: `{"url":"https://example.com/"}`},
		"snapshot":      {typ: "browser.snapshot", payload: `{"allElements":true}`},
		"click":         {typ: "browser.click", payload: `{"ref":"@e1","reason":"hello world"}`},
		"type":          {typ: "browser.type", payload: `{"ref":"@e1","text":"hello world","mode":"append","submit":"true"}`},
		"press":         {typ: "browser.press", payload: `{"key":"Tab","modifiers":"ctrl+shift","ref":"@e1"}`},
		"scroll":        {typ: "browser.scroll", payload: `{"direction":"up","amountPx":120,"ref":"@e1"}`},
		"extract":       {typ: "browser.extract", payload: `{"refs":"@e1,@e2"}`},
		"screenshot":    {typ: "browser.screenshot", payload: `{}`, stdout: `"mimeType": "image/png"`},
		"tasks list":    {typ: "tasks.list", payload: `{}`},
		"tasks get":     {typ: "tasks.get", payload: `{"id":"t1"}`},
		"tasks start":   {typ: "tasks.start", payload: `{"goal":"find the price","startUrl":"https://example.com/","autoConfirm":true,"attachments":[{"id":"a1","name":"doc.txt","path":"` + attachment + `"}]}`},
		"tasks stop":    {typ: "tasks.stop", payload: `{"id":"t1"}`},
		"tasks pause":   {typ: "tasks.pause", payload: `{"id":"t1"}`},
		"tasks resume":  {typ: "tasks.resume", payload: `{"id":"t1"}`},
		"tasks confirm": {typ: "tasks.confirm", payload: `{"id":"t1","allow":false}`},
		"tasks wait":    {typ: "tasks.wait", payload: `{"id":"t1","timeoutMs":2000}`},
		"tools":         {stdout: "browser_snapshot\t"},
		"tool":          {typ: "browser.scroll", payload: `{"direction":"up","amount":500,"amountPx":500}`, stdout: "Scrolled up. ok"},
	}
	b, requests := recordingBridge(t)
	for _, cmd := range commands {
		if cmd.name == "events" {
			continue // TestEvents
		}
		t.Run(cmd.usage, func(t *testing.T) {
			w, ok := wants[cmd.name]
			require.True(t, ok, "no expectation for %q", cmd.name)
			args := argsFromUsage(t, cmd.usage, samples)
			before := len(requests())
			code, out, errOut := runCtl(t.Context(), t, b, args...)
			require.Equal(t, exitOK, code, "agentctl %q: %s", args, errOut)
			got := requests()[before:]
			if w.typ == "" {
				assert.Empty(t, got)
			} else {
				require.Len(t, got, 1)
				assert.Equal(t, w.typ, got[0].Type)
				assert.JSONEq(t, w.payload, string(got[0].Payload))
			}
			assert.Contains(t, out, w.stdout)
		})
	}
	data, err := os.ReadFile(samples["FILE"])
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG\r\n\x1a\nfake", string(data))
}

func TestFlagsAnywhere(t *testing.T) {
	b, requests := recordingBridge(t)
	tests := []struct {
		args    []string
		payload string
	}{
		{[]string{"click", "-reason", "why", "@e2"}, `{"ref":"@e2","reason":"why"}`},
		{[]string{"click", "@e2", "-tab", "3"}, `{"ref":"@e2","tabId":3}`},
		{[]string{"-tab", "4", "click", "@e2"}, `{"ref":"@e2","tabId":4}`},
		{[]string{"type", "-submit", "@e4", "hello"}, `{"ref":"@e4","text":"hello","mode":"replace","submit":"true"}`},
		{[]string{"type", "@e4", "-append", "--", "-5"}, `{"ref":"@e4","text":"-5","mode":"append","submit":"false"}`},
		{[]string{"press", "-modifiers", "ctrl", "Enter"}, `{"key":"Enter","modifiers":"ctrl"}`},
	}
	for _, tt := range tests {
		before := len(requests())
		code, _, errOut := runCtl(t.Context(), t, b, tt.args...)
		require.Equal(t, exitOK, code, "%q: %s", tt.args, errOut)
		got := requests()[before:]
		require.Len(t, got, 1, "%q", tt.args)
		assert.JSONEq(t, tt.payload, string(got[0].Payload), "%q", tt.args)
	}
}

func TestUsageErrorsNeedNoBridge(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"fly"},
		{"click"},
		{"click", "@e1", "@e2"},
		{"click", "@e1", "-nope"},
		{"scroll", "sideways"},
		{"scroll", "down", "-amount", "-4"},
		{"tasks"},
		{"tasks", "explode", "t1"},
		{"tasks", "start", "g", "-attach", "a=relative.txt"},
		{"tasks", "wait", "t1", "-wait", "0s"},
		{"screenshot"},
		{"events", "now"},
		{"tool"},
	} {
		code, _, errOut := runCtl(t.Context(), t, nil, args...)
		assert.Equal(t, exitUsage, code, "%q", args)
		assert.NotEmpty(t, errOut, "%q", args)
	}
}

func TestUsageTextListsEveryCommand(t *testing.T) {
	code, _, errOut := runCtl(t.Context(), t, nil)
	require.Equal(t, exitUsage, code)
	for _, cmd := range commands {
		assert.Contains(t, errOut, "  "+cmd.usage+"\n")
	}
}

func TestToolErrors(t *testing.T) {
	b, requests := recordingBridge(t)
	code, _, errOut := runCtl(t.Context(), t, b, "tool", "browser_navigate", `{"url":3}`)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "at /url")
	code, _, errOut = runCtl(t.Context(), t, b, "tool", "browser_fly")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, `"browser_fly"`)
	assert.Empty(t, requests())
}

func TestEvents(t *testing.T) {
	b, _ := recordingBridge(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"events"}, env{
			Getenv: func(string) string { return "" }, Stdout: &stdout, Stderr: &stderr,
			Dial: func(ctx context.Context, _ string, opts *agentproto.ClientOptions) (*agentproto.Client, error) {
				return b.Dial(ctx, opts)
			},
		})
	}()
	// Events are not replayed: emit until the subscriber has one.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "task:update") && time.Now().Before(deadline) {
		require.NoError(t, b.Extension.Emit(json.RawMessage(`{"kind":"task:update", "task":{"id":"t1"}}`)))
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	assert.Equal(t, exitOK, <-done, stderr.String())
	assert.True(t, strings.HasPrefix(stdout.String(), `{"kind":"task:update","task":{"id":"t1"}}`+"\n"), "compact JSON lines: %q", stdout.String())
}

type errString string

func (e errString) Error() string { return string(e) }

// TestTasksWithAnyExtracted: tasks get and wait print a task whatever its
// steps extracted (they failed on anything but a list of elements), as
// sent.
func TestTasksWithAnyExtracted(t *testing.T) {
	for name, extracted := range map[string]string{
		"elements": `[{"ref":"@e1","text":"42 EUR"}]`,
		"object":   `{"rows":[{"name":"A","price":1}],"sheet":"Prices"}`,
		"string":   `"just text"`,
		"null":     `null`,
	} {
		task := `{"id":"t1","goal":"g","status":"done","steps":[{"id":"s1","index":0,"status":"ok","result":{"ok":true,"durationMs":3,"extracted":` + extracted + `}}]}`
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
			func(context.Context, *agentprototest.Request) (any, error) { return json.RawMessage(task), nil })}})
		require.NoError(t, b.WaitOnline(t.Context()))
		for _, args := range [][]string{{"tasks", "get", "t1"}, {"tasks", "wait", "t1", "-wait", "1s"}} {
			code, out, errOut := runCtl(t.Context(), t, b, args...)
			require.Equal(t, exitOK, code, "%s %q: %s", name, args, errOut)
			var got agentproto.Task
			require.NoError(t, json.Unmarshal([]byte(out), &got), "%s %q: %s", name, args, out)
			require.Len(t, got.Steps, 1)
			require.NotNil(t, got.Steps[0].Result)
			assert.JSONEq(t, extracted, string(got.Steps[0].Result.Extracted), "%s %q", name, args)
		}
		b.Close()
	}
}

// TestEnvironment checks that agentctl follows the reference client's
// variables (agentproto.Dial reads none itself), and that --socket wins.
func TestEnvironment(t *testing.T) {
	vars := map[string]string{agentproto.EnvSocket: "/env/agent.sock", agentproto.EnvToken: "env-token"}
	for _, tt := range []struct {
		name     string
		args     []string
		getenv   func(string) string
		wantPath string
		wantTok  string
	}{
		{"variables", []string{"health"}, func(k string) string { return vars[k] }, "/env/agent.sock", "env-token"},
		{"flag wins", []string{"--socket", "/flag.sock", "health"}, func(k string) string { return vars[k] }, "/flag.sock", "env-token"},
		{"none", []string{"health"}, func(string) string { return "" }, agentproto.PlatformSocketPath(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr syncbuf.Buffer
			var gotPath, gotTok string
			e := env{Getenv: tt.getenv, Stdout: &stdout, Stderr: &stderr,
				Dial: func(ctx context.Context, path string, opts *agentproto.ClientOptions) (*agentproto.Client, error) {
					gotPath, gotTok = path, opts.Token
					return nil, errors.New("no bridge here")
				}}
			assert.Equal(t, exitError, run(t.Context(), tt.args, e))
			assert.Equal(t, tt.wantPath, gotPath)
			assert.Equal(t, tt.wantTok, gotTok)
		})
	}
}
