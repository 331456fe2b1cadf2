package tools_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolsCatalogue(t *testing.T) {
	list := tools.List()
	var names []string
	for _, tool := range list {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		var schema struct {
			Type                 string         `json:"type"`
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		assert.Equal(t, "object", schema.Type, tool.Name)
		assert.NotNil(t, schema.Properties, tool.Name)
		require.NotNil(t, schema.AdditionalProperties, tool.Name)
		assert.False(t, *schema.AdditionalProperties, tool.Name)
	}
	assert.Equal(t, []string{
		"browser_snapshot", "browser_navigate", "browser_click", "browser_type", "browser_press",
		"browser_scroll", "browser_screenshot", "browser_extract", "browser_solve_captcha", "weboperator_execute_goal",
	}, names)

	// A fresh copy: changing it changes nothing for the next caller.
	list[0].Name = "changed"
	list[1].InputSchema[0] = 'X'
	again := tools.List()
	assert.Equal(t, "browser_snapshot", again[0].Name)
	assert.True(t, json.Valid(again[1].InputSchema))
}

// callers returns both kinds of Caller for a bridge: a socket Client and
// the in-process ExtensionCaller.
func callers(t *testing.T, b *agentprototest.Bridge) map[string]agentproto.Caller {
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return map[string]agentproto.Caller{"client": c, "extension": bridge.ExtensionCaller(b.Host)}
}

func TestCallToolMapping(t *testing.T) {
	const okJSON = "{\n  \"ok\": true\n}"
	tests := []struct {
		tool, args  string
		wantType    string
		wantPayload string
		wantText    string // the reference's text of {"ok":true}
	}{
		{"browser_snapshot", ``, "browser.snapshot", `{}`, okJSON},
		{"browser_navigate", `{"url":"https://example.com/"}`, "browser.navigate", `{"url":"https://example.com/"}`, "Navigated to https://example.com/. Current title: "},
		{"browser_click", `{"index":3}`, "browser.click", `{"index":3}`, "Clicked element. ok"},
		{"browser_click", `{"selector":"#buy"}`, "browser.click", `{"selector":"#buy"}`, "Clicked element. ok"},
		{"browser_type", `{"index":1,"text":"hi","clear":true}`, "browser.type", `{"clear":true,"index":1,"text":"hi"}`, `Typed into element: "hi". ok`},
		{"browser_press", `{"key":"Tab"}`, "browser.press", `{"key":"Tab"}`, `Pressed key "Tab". ok`},
		{"browser_scroll", `{}`, "browser.scroll", `{"amount":500,"amountPx":500,"direction":"down"}`, "Scrolled down. ok"},
		{"browser_scroll", `{"amount":0}`, "browser.scroll", `{"amount":500,"amountPx":500,"direction":"down"}`, "Scrolled down. ok"},
		{"browser_scroll", `{"direction":"up","amount":120}`, "browser.scroll", `{"amount":120,"amountPx":120,"direction":"up"}`, "Scrolled up. ok"},
		{"browser_screenshot", `{}`, "browser.screenshot", `{}`, okJSON},
		{"browser_extract", `{"instruction":"prices","selector":"main"}`, "browser.extract", `{"instruction":"prices","selector":"main"}`, okJSON},
		{"browser_solve_captcha", `{"type":"auto"}`, "browser.solve_captcha", `{}`, okJSON},
		{"browser_solve_captcha", `{}`, "browser.solve_captcha", `{}`, okJSON},
		{"browser_solve_captcha", `{"type":"hcaptcha"}`, "browser.solve_captcha", `{"type":"hcaptcha"}`, okJSON},
		{"browser_solve_captcha", `{"type":"press_and_hold"}`, "browser.solve_captcha", `{"type":"press_and_hold"}`, okJSON},
		// A type the catalogue does not list is forwarded: the extension decides.
		{"browser_solve_captcha", `{"type":"geetest"}`, "browser.solve_captcha", `{"type":"geetest"}`, okJSON},
	}
	b, requests := recordingBridge(t, nil)
	for kind, c := range callers(t, b) {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.tool+tt.args, func(t *testing.T) {
				before := len(requests())
				res, err := tools.Call(t.Context(), c, tt.tool, json.RawMessage(tt.args), nil)
				require.NoError(t, err)
				got := requests()
				require.Len(t, got, before+1)
				assert.Equal(t, tt.wantType, got[before].Type)
				assert.JSONEq(t, tt.wantPayload, string(got[before].Payload))
				assert.JSONEq(t, `{"ok":true}`, string(res.Result))
				assert.Equal(t, tt.wantText, res.Text)
				assert.JSONEq(t, `{"result":{"ok":true}}`, string(res.Structured))
				assert.Nil(t, res.Image)
			})
		}
	}
}

func TestCallToolRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name, tool, args string
		wantPath         string
		wantMessage      string
	}{
		{"missing required", "browser_navigate", `{}`, "", "missing properties: 'url'"},
		{"wrong type", "browser_navigate", `{"url":5}`, "/url", "expected string, but got number"},
		{"unknown argument", "browser_click", `{"ref":"@e1"}`, "", "additionalProperties 'ref' not allowed"},
		{"enum", "browser_scroll", `{"direction":"left"}`, "/direction", "value must be one of"},
		{"captcha type not a string", "browser_solve_captcha", `{"type":1}`, "/type", "expected string, but got number"},
		{"not an object", "browser_snapshot", `[1]`, "", "expected object, but got array"},
		{"not JSON", "browser_snapshot", `{"a":`, "", "not valid JSON"},
		{"duplicate key", "browser_navigate", `{"url":"a","url":"b"}`, "", "duplicate key"},
		{"case-variant key", "browser_navigate", `{"url":"a","URL":"b"}`, "", "differs only in case"},
		{"too large", "browser_type", `{"text":"` + strings.Repeat("x", tools.MaxArgumentsSize) + `"}`, "", "arguments exceed 1048576 bytes"},
		{"goal needs a goal", "weboperator_execute_goal", `{"timeoutMs":10}`, "", "missing properties: 'goal'"},
	}
	b, requests := recordingBridge(t, nil)
	for kind, c := range callers(t, b) {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				_, err := tools.Call(t.Context(), c, tt.tool, json.RawMessage(tt.args), nil)
				var ae *tools.ArgumentsError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.tool, ae.Tool)
				assert.Equal(t, tt.wantPath, ae.Path)
				assert.Contains(t, ae.Message, tt.wantMessage)
				assert.Contains(t, err.Error(), tt.tool)
			})
		}
	}
	assert.Empty(t, requests(), "nothing invalid reaches the extension")
}

func TestCallToolUnknown(t *testing.T) {
	b, requests := recordingBridge(t, nil)
	for kind, c := range callers(t, b) {
		_, err := tools.Call(t.Context(), c, "browser_teleport", nil, nil)
		require.ErrorIs(t, err, tools.ErrUnknown, kind)
		assert.Contains(t, err.Error(), `"browser_teleport"`, kind)
	}
	assert.Empty(t, requests())
}

func TestCallToolScreenshot(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n fake png bytes")
	jpeg := []byte("\xff\xd8\xff\xe0 fake jpeg bytes")
	tests := []struct {
		name     string
		result   any
		wantMIME string
		wantData []byte
	}{
		{"PNG", map[string]string{"kind": "screenshot", "dataUrl": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}, "image/png", png},
		{"JPEG, as both extensions send it", map[string]string{"kind": "screenshot", "dataUrl": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)}, "image/jpeg", jpeg},
		{"dataUri, as the reference MCP server looks for", map[string]string{"dataUri": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}, "image/png", png},
		{"not an image", map[string]string{"dataUrl": "data:text/html;base64,PGI+"}, "", nil},
		{"not base64", map[string]string{"dataUrl": "data:image/png;base64,@@@"}, "", nil},
		{"no data URL", map[string]string{"kind": "screenshot"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := recordingBridge(t, func(*agentprototest.Request) (any, error) { return tt.result, nil })
			for kind, c := range callers(t, b) {
				res, err := tools.Call(t.Context(), c, "browser_screenshot", nil, nil)
				require.NoError(t, err, kind)
				want, _ := json.Marshal(tt.result)
				assert.JSONEq(t, string(want), string(res.Result), kind)
				if tt.wantData == nil {
					assert.Nil(t, res.Image, kind)
					assert.Contains(t, res.Text, "{\n", kind)
					continue
				}
				require.NotNil(t, res.Image, kind)
				assert.Equal(t, tt.wantMIME, res.Image.MIMEType, kind)
				assert.Equal(t, tt.wantData, res.Image.Data, kind)
				assert.Contains(t, res.Text, tt.wantMIME, kind)
				assert.NotContains(t, res.Text, "base64", kind)
			}
		})
	}
}

func TestCallToolReturnsBridgeErrors(t *testing.T) {
	t.Run("extension error", func(t *testing.T) {
		b, _ := recordingBridge(t, func(r *agentprototest.Request) (any, error) {
			return nil, errorString(agentproto.MsgUnknownRequestPrefix + r.Type)
		})
		for kind, c := range callers(t, b) {
			_, err := tools.Call(t.Context(), c, "browser_solve_captcha", nil, nil)
			var re *agentproto.RemoteError
			require.ErrorAs(t, err, &re, kind)
			assert.Equal(t, "Unknown bridge request: browser.solve_captcha", re.Message, kind)
			assert.ErrorIs(t, err, agentproto.ErrUnknownRequest, kind)
		}
	})
	t.Run("extension offline", func(t *testing.T) {
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{NoHello: true}})
		t.Cleanup(func() { b.Close() })
		for kind, c := range callers(t, b) {
			_, err := tools.Call(t.Context(), c, "browser_snapshot", nil, nil)
			assert.ErrorIs(t, err, agentproto.ErrExtensionOffline, kind)
		}
	})
	t.Run("no extension", func(t *testing.T) {
		_, err := tools.Call(t.Context(), bridge.ExtensionCaller(nil), "browser_snapshot", nil, nil)
		assert.ErrorIs(t, err, agentproto.ErrExtensionOffline)
	})
	t.Run("context deadline", func(t *testing.T) {
		b := newBridge(t, &agentprototest.BridgeOptions{Manual: true})
		for kind, c := range callers(t, b) {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			_, err := tools.Call(ctx, c, "browser_snapshot", nil, nil)
			cancel()
			assert.ErrorIs(t, err, agentproto.ErrTimeout, kind)
		}
	})
}

func TestExtensionCallerLeavesEventsToTheServer(t *testing.T) {
	b := newBridge(t, nil)
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	sub := c.Subscribe(nil)
	defer sub.Close()
	_ = bridge.ExtensionCaller(b.Host)
	_, err = c.Health(t.Context()) // the server has this client now
	require.NoError(t, err)
	require.NoError(t, b.Extension.Emit(json.RawMessage(`{"kind":"task:update","task":{"id":"t1"}}`)))
	select {
	case e := <-sub.Events():
		assert.Equal(t, agentproto.EventTaskUpdate, e.Kind)
	case <-time.After(5 * time.Second):
		t.Fatal("the server's clients lost the extension's events")
	}
}

func TestCallToolExecuteGoal(t *testing.T) {
	task := `{"id":"t1","goal":"find the price","status":"done","modelUsed":"m1","steps":[
		{"status":"ok","toolCall":{"name":"extract","arguments":{"instruction":"price"}},"result":{"ok":true,"extracted":[{"ref":"@e1","text":"42 EUR"}]}},
		{"status":"ok","toolCall":{"name":"done","arguments":{"answer":"The price is 42 EUR"}}}]}`
	b, requests := recordingBridge(t, func(r *agentprototest.Request) (any, error) {
		switch r.Type {
		case agentproto.TypeTasksStart:
			return json.RawMessage(`{"id":"t1","goal":"find the price","status":"idle","steps":[]}`), nil
		case agentproto.TypeTasksWait:
			return json.RawMessage(task), nil
		}
		return nil, errorString("unexpected " + r.Type)
	})
	for kind, c := range callers(t, b) {
		before := len(requests())
		var progress []string
		res, err := tools.Call(t.Context(), c, "weboperator_execute_goal", json.RawMessage(`{"goal":"find the price","timeoutMs":5000}`),
			&tools.CallOptions{Progress: func(p tools.Progress) { progress = append(progress, p.Message) }})
		require.NoError(t, err, kind)
		got := requests()[before:]
		require.Len(t, got, 2, kind)
		assert.Equal(t, agentproto.TypeTasksStart, got[0].Type)
		assert.JSONEq(t, `{"goal":"find the price","timeoutMs":5000}`, string(got[0].Payload))
		assert.Equal(t, agentproto.TypeTasksWait, got[1].Type)
		assert.JSONEq(t, `{"id":"t1","timeoutMs":5000}`, string(got[1].Payload))
		assert.JSONEq(t, `{"ok":true,"status":"done","goal":"find the price","answer":"The price is 42 EUR",
			"extracted":[[{"ref":"@e1","text":"42 EUR"}]],"stepCount":2,"modelUsed":"m1","taskId":"t1"}`, string(res.Result), kind)
		assert.Equal(t, "The price is 42 EUR", res.Text, "the reference's text: the answer")
		assert.JSONEq(t, string(res.Result), string(res.Structured))
		require.Len(t, progress, 2, kind)
		assert.Contains(t, progress[0], "t1")
		assert.Contains(t, progress[1], "done")
	}
}

func TestCallToolExecuteGoalSummary(t *testing.T) {
	tests := []struct {
		name, task string
		want       string
	}{
		{"note of an ok step", `{"id":"t1","goal":"g","status":"done","steps":[{"status":"fail","note":"no"},{"status":"ok","note":"Found it"}]}`,
			`{"ok":true,"status":"done","goal":"g","answer":"Found it","stepCount":2,"taskId":"t1"}`},
		{"string extracted", `{"id":"t1","goal":"g","status":"done","steps":[{"status":"ok","result":{"extracted":"just text"}}]}`,
			`{"ok":true,"status":"done","goal":"g","answer":"just text","extracted":["just text"],"stepCount":1,"taskId":"t1"}`},
		{"plan steps", `{"id":"t1","goal":"g","status":"done","steps":[],"plan":{"steps":[{"status":"done","description":"open"},{"status":"todo","description":"x"},{"status":"done","description":"read"}]}}`,
			`{"ok":true,"status":"done","goal":"g","answer":"✓ open\n✓ read","stepCount":0,"taskId":"t1"}`},
		{"done without anything", `{"id":"t1","goal":"g","status":"done","steps":[]}`,
			`{"ok":true,"status":"done","goal":"g","answer":"Goal completed successfully: \"g\"","stepCount":0,"taskId":"t1"}`},
		{"failed", `{"id":"t1","goal":"g","status":"failed","error":"boom","steps":[]}`,
			`{"ok":false,"status":"failed","goal":"g","answer":"Goal failed: boom","stepCount":0,"error":"boom","taskId":"t1"}`},
		{"still running", `{"id":"t1","goal":"g","status":"running","steps":[{"status":"running"}]}`,
			`{"ok":false,"status":"running","goal":"g","answer":"","stepCount":1,"taskId":"t1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := recordingBridge(t, func(r *agentprototest.Request) (any, error) {
				if r.Type == agentproto.TypeTasksStart {
					return json.RawMessage(`{"id":"t1","status":"idle"}`), nil
				}
				return json.RawMessage(tt.task), nil
			})
			res, err := tools.Call(t.Context(), bridge.ExtensionCaller(b.Host), "weboperator_execute_goal", json.RawMessage(`{"goal":"g"}`), nil)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(res.Result))
		})
	}
	t.Run("start without an id is the task, as the reference reads it", func(t *testing.T) {
		b, requests := recordingBridge(t, func(*agentprototest.Request) (any, error) {
			return json.RawMessage(`{"queued":true}`), nil
		})
		res, err := tools.Call(t.Context(), bridge.ExtensionCaller(b.Host), "weboperator_execute_goal", json.RawMessage(`{"goal":"g"}`), nil)
		require.NoError(t, err)
		assert.JSONEq(t, `{"ok":false,"status":"","answer":"","stepCount":0}`, string(res.Result))
		assert.Equal(t, "{\n  \"ok\": false,\n  \"answer\": \"\",\n  \"stepCount\": 0\n}", res.Text)
		assert.Len(t, requests(), 1, "no wait without a task id")
		assert.JSONEq(t, `{"goal":"g","timeoutMs":120000}`, string(requests()[0].Payload), "the default wait")
	})
	t.Run("timeoutMs is capped", func(t *testing.T) {
		for args, want := range map[string]string{
			`{"goal":"g","timeoutMs":1e300}`: `{"goal":"g","timeoutMs":3600000}`,
			`{"goal":"g","timeoutMs":0.2}`:   `{"goal":"g","timeoutMs":1}`,
			`{"goal":"g","timeoutMs":-5}`:    `{"goal":"g","timeoutMs":120000}`,
		} {
			b, requests := recordingBridge(t, func(*agentprototest.Request) (any, error) {
				return json.RawMessage(`{"queued":true}`), nil
			})
			_, err := tools.Call(t.Context(), bridge.ExtensionCaller(b.Host), "weboperator_execute_goal", json.RawMessage(args), nil)
			require.NoError(t, err)
			assert.JSONEq(t, want, string(requests()[0].Payload), args)
		}
	})
	t.Run("the cap is an option", func(t *testing.T) {
		b, requests := recordingBridge(t, func(*agentprototest.Request) (any, error) {
			return json.RawMessage(`{"queued":true}`), nil
		})
		opts := &tools.CallOptions{MaxGoalTimeout: 3 * time.Hour}
		_, err := tools.Call(t.Context(), bridge.ExtensionCaller(b.Host), "weboperator_execute_goal", json.RawMessage(`{"goal":"g","timeoutMs":1e300}`), opts)
		require.NoError(t, err)
		assert.JSONEq(t, `{"goal":"g","timeoutMs":10800000}`, string(requests()[0].Payload))
	})
	t.Run("a failed start is the error", func(t *testing.T) {
		b, _ := recordingBridge(t, func(*agentprototest.Request) (any, error) { return nil, errorString("No LLM configured") })
		_, err := tools.Call(t.Context(), bridge.ExtensionCaller(b.Host), "weboperator_execute_goal", json.RawMessage(`{"goal":"g"}`), nil)
		var re *agentproto.RemoteError
		require.True(t, errors.As(err, &re))
		assert.Equal(t, "No LLM configured", re.Message)
	})
}

// TestCallToolGoalCancelled: a goal whose call is cancelled once its task
// started stops the task (tasks.stop {id}); before, the task ran on.
func TestCallToolGoalCancelled(t *testing.T) {
	for _, during := range []string{agentproto.TypeTasksStart, agentproto.TypeTasksWait} {
		t.Run("during "+during, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stopped := make(chan struct{})
			b, requests := recordingBridge(t, func(r *agentprototest.Request) (any, error) {
				if r.Type == during {
					cancel() // the client cancels while the command runs
					if during == agentproto.TypeTasksWait {
						select { // the wait goes on until the task stops
						case <-stopped:
						case <-t.Context().Done():
						}
						return json.RawMessage(`null`), nil
					}
				}
				switch r.Type {
				case agentproto.TypeTasksStart:
					return json.RawMessage(`{"id":"t1","status":"idle"}`), nil
				case agentproto.TypeTasksStop:
					close(stopped)
					return json.RawMessage(`{"ok":true}`), nil
				}
				return nil, errorString("unexpected " + r.Type)
			})
			c, err := b.Dial(t.Context(), nil)
			require.NoError(t, err)
			defer c.Close()
			_, err = tools.Call(ctx, c, "weboperator_execute_goal", json.RawMessage(`{"goal":"g"}`), nil)
			require.ErrorIs(t, err, context.Canceled)
			got := requests()
			require.NotEmpty(t, got)
			assert.Equal(t, agentproto.TypeTasksStop, got[len(got)-1].Type)
			assert.JSONEq(t, `{"id":"t1"}`, string(got[len(got)-1].Payload))
		})
	}
}

// TestCallToolGoalProgressPerStep: through a Client (an EventCaller) each
// finished step of the task is one progress report, with the plan's
// length as the total.
func TestCallToolGoalProgressPerStep(t *testing.T) {
	var b *agentprototest.Bridge
	b, _ = recordingBridge(t, func(r *agentprototest.Request) (any, error) {
		switch r.Type {
		case agentproto.TypeTasksStart:
			return json.RawMessage(`{"id":"t1","status":"idle"}`), nil
		case agentproto.TypeTasksWait:
			for _, e := range []string{
				`{"kind":"task:update","task":{"id":"t1","status":"running","plan":{"steps":[{"description":"open"},{"description":"read"},{"description":"answer"}]}}}`,
				`{"kind":"task:step","taskId":"t1","step":{"id":"s1","index":0,"status":"running"}}`,
				`{"kind":"task:step","taskId":"t1","step":{"id":"s1","index":0,"status":"ok","toolCall":{"name":"navigate"}}}`,
				`{"kind":"task:step","taskId":"other","step":{"id":"x","index":0,"status":"ok"}}`,
				`{"kind":"task:step","taskId":"t1","step":{"id":"s2","index":1,"status":"fail","toolCall":{"name":"click"}}}`,
			} {
				if err := b.Extension.Emit(json.RawMessage(e)); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{"id":"t1","status":"done","steps":[{},{},{}]}`), nil
		}
		return nil, errorString("unexpected " + r.Type)
	})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	var got []tools.Progress
	_, err = tools.Call(t.Context(), c, "weboperator_execute_goal", json.RawMessage(`{"goal":"g","timeoutMs":5000}`),
		&tools.CallOptions{Progress: func(p tools.Progress) { got = append(got, p) }})
	require.NoError(t, err)
	assert.Equal(t, []tools.Progress{
		{Message: "Task t1 started; waiting up to 5s for it to finish"},
		{Done: 1, Total: 3, Message: "Step 1 (navigate): ok"},
		{Done: 2, Total: 3, Message: "Step 2 (click): fail"},
		{Done: 3, Total: 3, Message: "Task t1 is done"},
	}, got)
}

// TestCaptchaTypesAreTheSchemaEnum: CaptchaTypes says it is what
// browser_solve_captcha's schema lists; the two are written separately.
func TestCaptchaTypesAreTheSchemaEnum(t *testing.T) {
	for _, tool := range tools.List() {
		if tool.Name != tools.BrowserSolveCaptcha {
			continue
		}
		var schema struct {
			Properties struct {
				Type struct {
					Enum []string `json:"enum"`
				} `json:"type"`
			} `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		assert.Equal(t, tools.CaptchaTypes, schema.Properties.Type.Enum)
		return
	}
	t.Fatal("browser_solve_captcha is not listed")
}
