package agentproto_test

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/nativemsg"
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
		{name: "the last of two wins, as in encoding/json", result: `{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,eHg=","dataUrl":"data:image/jpeg;base64,QUJD"}`,
			wantData: "ABC"},
		{name: "no data URL", result: `{"kind":"screenshot"}`,
			wantErr: `agentproto: invalid result of browser.screenshot: result has no "dataUrl" member`},
		{name: "no kind", result: `{"dataUrl":"data:image/jpeg;base64,QUJD"}`,
			wantErr: `agentproto: invalid result of browser.screenshot: result has no kind (want "screenshot")`},
		{name: "data URL not a string", result: `{"kind":"screenshot","dataUrl":7}`,
			wantErr: "agentproto: invalid result of browser.screenshot: result.dataUrl is not a string"},
		{name: "null result", result: `null`, wantErr: "agentproto: invalid result of browser.screenshot: result is null, not an object"},
		{name: "bad base64", result: `{"kind":"screenshot","dataUrl":"data:image/png;base64,Q!JD"}`,
			wantErr: "agentproto: invalid result of browser.screenshot: agentproto: malformed data URL: illegal base64 data at input byte 1"},
		{name: "escaped bad base64", result: `{"kind":"screenshot","dataUrl":"data:image\/png;base64,Q!JD"}`,
			wantErr: "agentproto: invalid result of browser.screenshot: agentproto: malformed data URL: illegal base64 data at input byte 1"},
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
				assert.ErrorIs(t, err, agentproto.ErrInvalidResult)
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

// TestTypedResultShapes checks that every typed method refuses a result
// of the wrong shape with ErrInvalidResult, and takes the shapes the
// extensions send (the reference's and this project's).
func TestTypedResultShapes(t *testing.T) {
	const (
		snap = `{"url":"https://a/","title":"A","viewport":{"w":1,"h":1,"scrollX":0,"scrollY":0},` +
			`"nodes":[{"ref":"@e1","role":"button","name":"Go","bbox":{"x":0,"y":0,"w":1,"h":1},"inViewport":true}],"domHash":"h","takenAt":1}`
		task = `{"id":"t1","goal":"g","status":"idle","steps":[],"createdAt":1,"updatedAt":1}`
		any_ = "*" // any message matching ErrInvalidResult
	)
	type call func(context.Context, *agentproto.Client) (any, error)
	actionBad := map[string]string{
		`null`:                                             "result is null, not an object",
		`{"ok":true}`:                                      `result has no kind (want "action:result")`,
		`{"kind":"action:result"}`:                         `result has no "result" member`,
		`{"kind":"action:result","result":null}`:           "result.result is null",
		`{"kind":"action:result","result":{}}`:             `result.result has no "ok" member`,
		`{"kind":"snapshot","result":{"ok":true}}`:         `result has kind "snapshot", not "action:result"`,
		`{"kind":"error","error":"Element @e9 not found"}`: "result is an error: Element @e9 not found",
		`{"kind":"action:result","result":{"ok":1}}`:       any_,
	}
	actionGood := []string{`{"kind":"action:result","result":{"ok":true,"durationMs":3}}`,
		`{"kind":"action:result","result":{"ok":false,"error":"Element @e9 not found"}}`,
		`{"kind":"action:result","result":{"ok":true,"extracted":[{"ref":"@e1","text":"x"}]}}`}
	taskBad := map[string]string{
		`{}`:                        `result has no "id" member`,
		`{"id":"t1"}`:               `result has no "status" member`,
		`{"id":"t1","status":null}`: "result.status is null",
		`{"id":"","status":"idle"}`: "result has no id",
		`{"id":"t1","status":""}`:   "result has no status",
		`"t1"`:                      "result is a string, not an object",
		`{"id":7,"status":"idle"}`:  any_,
	}
	okBad := map[string]string{
		`null`:         "result is null, not an object",
		`{}`:           `result has no "ok" member`,
		`{"ok":false}`: "result.ok is false",
		`{"ok":null}`:  "result.ok is null",
		`true`:         "result is a boolean, not an object",
	}
	methods := []struct {
		name string
		call call
		good []string
		bad  map[string]string // result: the error's text after "agentproto: invalid result of <type>: "
	}{
		{
			name: "Navigate",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Navigate(ctx, agentproto.NavigateParams{URL: "https://a/"})
			},
			good: []string{`{"ok":true,"tabId":7,"url":"https://a/"}`},
			bad: map[string]string{
				`null`:                             "result is null, not an object",
				`{}`:                               `result has no "ok" member`,
				`{"ok":true,"url":"https://a/"}`:   `result has no "tabId" member`,
				`{"ok":true,"tabId":7,"url":null}`: "result.url is null",
				`{"ok":"yes","tabId":7,"url":"x"}`: any_,
				`[1]`:                              "result is a list, not an object",
			},
		},
		{
			name: "Snapshot",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Snapshot(ctx, agentproto.SnapshotParams{})
			},
			good: []string{`{"kind":"snapshot","snapshot":` + snap + `}`},
			bad: map[string]string{
				snap:                                  `result has no kind (want "snapshot")`,
				`{"kind":"snapshot"}`:                 `result has no "snapshot" member`,
				`{"kind":"snapshot","snapshot":null}`: "result.snapshot is null",
				`{"kind":"snapshot","snapshot":{}}`:   `result.snapshot has no "url" member`,
				`{"kind":"screenshot","snapshot":` + snap + `}`:                                                      `result has kind "screenshot", not "snapshot"`,
				`{"kind":"snapshot","snapshot":"x"}`:                                                                 "result.snapshot is a string, not an object",
				`{"kind":"snapshot","snapshot":` + strings.Replace(snap, `"nodes":[`, `"nodes":null,"x":[`, 1) + `}`: "result.snapshot.nodes is null",
				`{"kind":"snapshot","snapshot":` + strings.Replace(snap, `"ref":"@e1",`, ``, 1) + `}`:                "result.snapshot.nodes[0] has no ref",
				`{"kind":"snapshot","snapshot":` + strings.Replace(snap, `"nodes":[`, `"nodes":{"a":[`, 1) + `}}`:    any_,
				`{"kind":"error","error":"Cannot access contents of the page"}`:                                      "result is an error: Cannot access contents of the page",
				`null`: "result is null, not an object",
			},
		},
		{name: "Click", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Click(ctx, agentproto.ClickParams{Ref: "@e1"})
		}, good: actionGood, bad: actionBad},
		{name: "Type", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Type(ctx, agentproto.TypeParams{Ref: "@e1", Text: "x"})
		}, good: actionGood, bad: actionBad},
		{name: "Press", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Press(ctx, agentproto.PressParams{})
		}, good: actionGood, bad: actionBad},
		{name: "Scroll", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Scroll(ctx, agentproto.ScrollParams{Direction: agentproto.ScrollDown})
		}, good: actionGood, bad: actionBad},
		{name: "Extract", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Extract(ctx, agentproto.ExtractParams{Refs: agentproto.ExtractVisible})
		}, good: actionGood, bad: actionBad},
		{
			name: "ListTasks",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) { return c.ListTasks(ctx) },
			good: []string{`[]`, `[` + task + `,` + task + `]`},
			bad: map[string]string{
				`null`:                       "result is null, not a list",
				`{"tasks":[]}`:               "result is an object, not a list",
				`[null]`:                     "result[0] has no id",
				`[` + task + `,{"id":"t2"}]`: "result[1] has no status",
				`[1]`:                        any_,
			},
		},
		{
			name: "GetTask",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) { return c.GetTask(ctx, "t1") },
			good: []string{task},
			bad:  taskBad,
		},
		{
			name: "StartTask",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.StartTask(ctx, agentproto.StartTaskParams{Goal: "g"})
			},
			good: []string{task},
			bad:  merge(taskBad, map[string]string{`null`: "result is null, not an object"}),
		},
		{
			name: "WaitTask",
			call: func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.WaitTask(ctx, agentproto.WaitParams{ID: "t1", TimeoutMs: 1000})
			},
			good: []string{task},
			bad:  taskBad,
		},
		{name: "StopTask", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return nil, c.StopTask(ctx, "t1")
		}, good: []string{`{"ok":true}`}, bad: okBad},
		{name: "PauseTask", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return nil, c.PauseTask(ctx, "t1")
		}, good: []string{`{"ok":true}`}, bad: okBad},
		{name: "ResumeTask", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return nil, c.ResumeTask(ctx, "t1")
		}, good: []string{`{"ok":true}`}, bad: okBad},
		{name: "ConfirmTask", call: func(ctx context.Context, c *agentproto.Client) (any, error) {
			return nil, c.ConfirmTask(ctx, "t1", true)
		}, good: []string{`{"ok":true}`}, bad: okBad},
	}
	for _, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			var result json.RawMessage
			var typ string
			b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
				func(_ context.Context, r *agentprototest.Request) (any, error) {
					typ = r.Type
					return result, nil
				})}})
			c, err := b.Dial(t.Context(), nil)
			require.NoError(t, err)
			defer c.Close()
			for _, good := range m.good {
				result = json.RawMessage(good)
				v, err := m.call(t.Context(), c)
				assert.NoError(t, err, good)
				if v != nil {
					assert.NotNil(t, v, good)
				}
			}
			for bad, want := range m.bad {
				result = json.RawMessage(bad)
				v, err := m.call(t.Context(), c)
				require.Error(t, err, bad)
				assert.ErrorIs(t, err, agentproto.ErrInvalidResult, bad)
				if want != any_ {
					assert.Equal(t, "agentproto: invalid result of "+typ+": "+want, err.Error(), bad)
				}
				if v != nil {
					assert.Nil(t, v, "%s: no value with an error", bad)
				}
			}
		})
	}
}

// TestTypedResultErrorFromPage checks that the reference extension's
// {"kind":"error"} answer keeps the page's message as a RemoteError.
func TestTypedResultErrorFromPage(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			return json.RawMessage(`{"kind":"error","error":"Unknown message"}`), nil
		})}})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Snapshot(t.Context(), agentproto.SnapshotParams{})
	var re *agentproto.RemoteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Unknown message", re.Message)
	assert.ErrorIs(t, err, agentproto.ErrInvalidResult)
}

func TestNullTaskIsErrNoTask(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) { return json.RawMessage(`null`), nil })}})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	task, err := c.GetTask(t.Context(), "t1")
	assert.ErrorIs(t, err, agentproto.ErrNoTask)
	assert.Nil(t, task)
	task, err = c.WaitTask(t.Context(), agentproto.WaitParams{ID: "t1", TimeoutMs: 1000})
	assert.ErrorIs(t, err, agentproto.ErrNoTask)
	assert.Nil(t, task)
}

func merge(a, b map[string]string) map[string]string {
	m := maps.Clone(a)
	maps.Copy(m, b)
	return m
}

// TestEnumsOnTheWire checks that the named enum types travel as the
// strings the extension reads, and what their zero values send.
func TestEnumsOnTheWire(t *testing.T) {
	for _, tt := range []struct {
		params any
		want   string
	}{
		{agentproto.ScrollParams{Direction: agentproto.ScrollToRef, Ref: "@e2"}, `{"direction":"to_ref","ref":"@e2"}`},
		{agentproto.ScrollParams{Direction: agentproto.ScrollUp, AmountPx: 300}, `{"direction":"up","amountPx":300}`},
		{agentproto.ScrollParams{}, `{}`}, // the extensions' default: down ("" fails in the reference)
		{agentproto.TypeParams{Ref: "@e1", Text: "x", Mode: agentproto.TypeModeAppend}, `{"ref":"@e1","text":"x","mode":"append","submit":"false"}`},
		{agentproto.TypeParams{Ref: "@e1", Text: "x"}, `{"ref":"@e1","text":"x","submit":"false"}`}, // replace
		{agentproto.ExtractParams{Refs: agentproto.ExtractAll}, `{"refs":"all"}`},
		{agentproto.ExtractParams{Refs: agentproto.ExtractRefs("@e1", "@f2e3")}, `{"refs":"@e1,@f2e3"}`},
	} {
		b, err := json.Marshal(tt.params)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(b))
	}
}

// TestHealthResultShape checks Health against a server that is not this
// package's (which always answers well): a peer speaking the protocol
// over net.Pipe, answering bridge.health with each result in turn.
func TestHealthResultShape(t *testing.T) {
	for result, want := range map[string]string{
		`{"ok":true,"bridge":"online","extension":"offline","authRequired":true}`: "",
		`null`:                          "result is null, not an object",
		`{}`:                            `result has no "ok" member`,
		`{"ok":true,"bridge":"online"}`: `result has no "extension" member`,
		`{"ok":true,"bridge":null,"extension":"online"}`: "result.bridge is null",
		`{"ok":true,"bridge":"online","extension":7}`:    "*",
	} {
		clientEnd, serverEnd := net.Pipe()
		c := agentproto.NewClient(clientEnd, nil)
		go func() {
			r := nativemsg.NewReader(serverEnd, nil)
			w := nativemsg.NewWriter(serverEnd, nil)
			var req struct {
				ID string `json:"id"`
			}
			if r.Decode(&req) == nil {
				w.WriteMessage([]byte(`{"id":"` + req.ID + `","result":` + result + `}`))
			}
		}()
		h, err := c.Health(t.Context())
		if want == "" {
			assert.NoError(t, err, result)
			assert.Equal(t, "offline", h.Extension)
		} else {
			assert.ErrorIs(t, err, agentproto.ErrInvalidResult, result)
			assert.Nil(t, h, result)
			if want != "*" {
				assert.EqualError(t, err, "agentproto: invalid result of bridge.health: "+want, result)
			}
		}
		c.Close()
		serverEnd.Close()
	}
}
