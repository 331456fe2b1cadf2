package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoAPI is an HTTP API (token "tok") whose extension answers every
// request with its type and payload.
func echoAPI(t *testing.T, opts *httpapi.HandlerOptions) (http.Handler, *agentprototest.Bridge) {
	b := newBridge(t, &agentprototest.BridgeOptions{
		Server: bridge.ServerOptions{Token: "tok"},
		Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
			return map[string]any{"type": r.Type, "payload": r.Payload}, nil
		})},
	})
	return httpapi.NewHandler(b.Server, opts), b
}

type httpCase struct {
	name, method, target string
	body                 io.Reader
	headers              map[string]string
	wantStatus           int
	wantBody             string
}

func (tt httpCase) run(t *testing.T, h http.Handler) {
	t.Helper()
	req := httptest.NewRequest(tt.method, "http://127.0.0.1:8765"+tt.target, tt.body)
	for k, v := range tt.headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, tt.wantStatus, rec.Code, rec.Body.String())
	if tt.wantBody != "" {
		assert.JSONEq(t, tt.wantBody, rec.Body.String())
	}
}

// unknownLength hides a body's length, as a chunked request has none.
type unknownLength struct{ io.Reader }

// Issue 11, item 2: the reference's clients send control POSTs without a
// body or a Content-Type.
func TestHTTPBodylessPosts(t *testing.T) {
	h, _ := echoAPI(t, nil)
	auth := map[string]string{"Authorization": "Bearer tok"}
	withType := func(ct string) map[string]string {
		return map[string]string{"Authorization": "Bearer tok", "Content-Type": ct}
	}
	tests := []httpCase{
		{name: "stop without body or type", method: "POST", target: "/v1/tasks/t1/stop", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.stop","payload":{"id":"t1"}}`},
		{name: "pause with a form type but no body", method: "POST", target: "/v1/tasks/t1/pause", body: strings.NewReader(""),
			headers: withType("application/x-www-form-urlencoded"), wantStatus: 200, wantBody: `{"type":"tasks.pause","payload":{"id":"t1"}}`},
		{name: "resume with text/plain and no body", method: "POST", target: "/v1/tasks/t1/resume", headers: withType("text/plain"), wantStatus: 200,
			wantBody: `{"type":"tasks.resume","payload":{"id":"t1"}}`},
		{name: "wait without body", method: "POST", target: "/v1/tasks/t1/wait", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.wait","payload":{"id":"t1"}}`},
		{name: "extract without body", method: "POST", target: "/v1/browser/extract", headers: auth, wantStatus: 200,
			wantBody: `{"type":"browser.extract","payload":{}}`},
		{name: "empty chunked body without type", method: "POST", target: "/v1/tasks/t1/stop", body: unknownLength{strings.NewReader("")},
			headers: auth, wantStatus: 200, wantBody: `{"type":"tasks.stop","payload":{"id":"t1"}}`},
		{name: "non-empty body still needs JSON", method: "POST", target: "/v1/tasks/t1/stop", body: strings.NewReader(`{}`),
			headers: withType("text/plain"), wantStatus: 415, wantBody: `{"error":"Content-Type must be application/json"}`},
		{name: "non-empty body without type", method: "POST", target: "/v1/tasks/t1/confirm", body: strings.NewReader(`{"allow":true}`),
			headers: auth, wantStatus: 415, wantBody: `{"error":"Content-Type must be application/json"}`},
		{name: "non-empty chunked body without type", method: "POST", target: "/v1/tasks/t1/stop", body: unknownLength{strings.NewReader(`{}`)},
			headers: auth, wantStatus: 415, wantBody: `{"error":"Content-Type must be application/json"}`},
		{name: "JSON body as before", method: "POST", target: "/v1/tasks/t1/wait", body: strings.NewReader(`{"timeoutMs":5}`),
			headers: withType("application/json"), wantStatus: 200, wantBody: `{"type":"tasks.wait","payload":{"id":"t1","timeoutMs":5}}`},
		{name: "still needs the token", method: "POST", target: "/v1/tasks/t1/stop", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, h) })
	}
}

// Issue 11, item 4: trailing slashes and percent-encoded ids, as the
// reference normalises and decodes them.
func TestHTTPPaths(t *testing.T) {
	h, _ := echoAPI(t, nil)
	auth := map[string]string{"Authorization": "Bearer tok"}
	tests := []httpCase{
		{name: "health with a slash needs no token", method: "GET", target: "/health/", wantStatus: 200,
			wantBody: `{"ok":true,"bridge":"online","extension":"online","authRequired":true}`},
		{name: "tasks with a slash", method: "GET", target: "/v1/tasks/", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.list","payload":{}}`},
		{name: "several slashes", method: "GET", target: "/v1/tasks//", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.list","payload":{}}`},
		{name: "trace with a slash", method: "GET", target: "/v1/tasks/abc/trace/", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.get","payload":{"id":"abc"}}`},
		{name: "snapshot with a slash", method: "GET", target: "/v1/browser/snapshot/", headers: auth, wantStatus: 200,
			wantBody: `{"type":"browser.snapshot","payload":{}}`},
		{name: "encoded slash in an id", method: "GET", target: "/v1/tasks/a%2Fb", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.get","payload":{"id":"a/b"}}`},
		{name: "encoded slash in a control id", method: "POST", target: "/v1/tasks/a%2Fb/stop", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.stop","payload":{"id":"a/b"}}`},
		{name: "encoded quote and unicode", method: "GET", target: "/v1/tasks/%22%C3%A9%22", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.get","payload":{"id":"\"é\""}}`},
		{name: "id that is not UTF-8", method: "GET", target: "/v1/tasks/%FF", headers: auth, wantStatus: 400,
			wantBody: `{"error":"Task id is not a valid percent-encoded UTF-8 string"}`},
		{name: "unknown endpoint names the normalised path", method: "GET", target: "/v2/x/", headers: auth, wantStatus: 404,
			wantBody: `{"error":"Unknown endpoint: GET /v2/x"}`},
		{name: "extra segment", method: "GET", target: "/v1/tasks/a/b/c", headers: auth, wantStatus: 404,
			wantBody: `{"error":"Unknown endpoint: GET /v1/tasks/a/b/c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, h) })
	}
}

// Issue 11, item 3: the newest reference's routes, with the same refusals
// as the others.
func TestHTTPToolRoutes(t *testing.T) {
	h, b := echoAPI(t, &httpapi.HandlerOptions{MaxBodySize: 4096})
	auth := map[string]string{"Authorization": "Bearer tok"}
	post := map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"}
	body := strings.NewReader
	tests := []httpCase{
		{name: "goal is tasks.start", method: "POST", target: "/v1/goal", body: body(`{"goal":"g"}`), headers: post, wantStatus: 200,
			wantBody: `{"type":"tasks.start","payload":{"goal":"g"}}`},
		{name: "goal needs POST", method: "GET", target: "/v1/goal", headers: auth, wantStatus: 405},
		{name: "call a tool", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_navigate","arguments":{"url":"https://example.com/"}}`),
			headers: post, wantStatus: 200, wantBody: `{"type":"browser.navigate","payload":{"url":"https://example.com/"}}`},
		{name: "name and parameters, as the reference accepts", method: "POST", target: "/v1/tools/call", body: body(`{"name":"browser_press","parameters":{"key":"Tab"}}`),
			headers: post, wantStatus: 200, wantBody: `{"type":"browser.press","payload":{"key":"Tab"}}`},
		{name: "payload, and tool wins over name", method: "POST", target: "/v1/tools/call", body: body(`{"name":"browser_press","tool":"browser_scroll","payload":{"direction":"up"}}`),
			headers: post, wantStatus: 200, wantBody: `{"type":"browser.scroll","payload":{"direction":"up","amount":500,"amountPx":500}}`},
		{name: "no arguments", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_snapshot","timeoutMs":5000}`),
			headers: post, wantStatus: 200, wantBody: `{"type":"browser.snapshot","payload":{}}`},
		{name: "unknown tool", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_fly"}`), headers: post, wantStatus: 400,
			wantBody: `{"error":"Unknown tool: browser_fly"}`},
		{name: "no tool", method: "POST", target: "/v1/tools/call", headers: auth, wantStatus: 400, wantBody: `{"error":"Unknown tool: "}`},
		{name: "invalid arguments", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_navigate","arguments":{"url":7}}`),
			headers: post, wantStatus: 400,
			wantBody: `{"error":"Invalid arguments for browser_navigate at /url: expected string, but got number","path":"/url"}`},
		{name: "missing argument", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_type","arguments":{}}`),
			headers: post, wantStatus: 400,
			wantBody: `{"error":"Invalid arguments for browser_type at /: missing properties: 'text'","path":""}`},
		{name: "tool must be a string", method: "POST", target: "/v1/tools/call", body: body(`{"tool":5}`), headers: post, wantStatus: 400,
			wantBody: `{"error":"Invalid tool call: tool must be a string"}`},
		{name: "timeoutMs must be a number", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_snapshot","timeoutMs":"5"}`), headers: post, wantStatus: 400,
			wantBody: `{"error":"Invalid tool call: timeoutMs must be a number"}`},
		{name: "duplicate keys refused", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_snapshot","tool":"browser_screenshot"}`), headers: post, wantStatus: 400},
		{name: "malformed JSON", method: "POST", target: "/v1/tools/call", body: body(`{"tool":`), headers: post, wantStatus: 400,
			wantBody: `{"error":"Request body must be JSON"}`},
		{name: "not an object", method: "POST", target: "/v1/tools/call", body: body(`["browser_snapshot"]`), headers: post, wantStatus: 400,
			wantBody: `{"error":"Request body must be a JSON object"}`},
		{name: "oversized", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_type","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}`),
			headers: post, wantStatus: 413, wantBody: `{"error":"Request body exceeds 4096 bytes"}`},
		{name: "form post refused", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_snapshot"}`),
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "text/plain"}, wantStatus: 415},
		{name: "tools/call needs POST", method: "GET", target: "/v1/tools/call", headers: auth, wantStatus: 405},
		{name: "tools/call needs the token", method: "POST", target: "/v1/tools/call", body: body(`{"tool":"browser_snapshot"}`),
			headers: map[string]string{"Content-Type": "application/json"}, wantStatus: 401},
		{name: "tools needs the token", method: "GET", target: "/v1/tools", wantStatus: 401},
		{name: "tools refuses web pages", method: "GET", target: "/v1/tools", headers: map[string]string{"Authorization": "Bearer tok", "Origin": "https://evil.example"},
			wantStatus: 403},
		{name: "preflight refused", method: "OPTIONS", target: "/v1/tools/call", headers: auth, wantStatus: 405},
		{name: "tools needs GET", method: "POST", target: "/v1/tools", headers: auth, wantStatus: 405},
	}
	before := b.Extension.Received()
	refused := 0
	for _, tt := range tests {
		if tt.wantStatus != 200 {
			refused++
		}
		t.Run(tt.name, func(t *testing.T) { tt.run(t, h) })
	}
	assert.Equal(t, len(tests)-refused, b.Extension.Received()-before, "refused requests never reach the extension")
}

func TestHTTPToolsListing(t *testing.T) {
	h, _ := echoAPI(t, nil)
	req := httptest.NewRequest("GET", "http://127.0.0.1:8765/v1/tools/", nil)
	req.Header.Set("X-WebOperator-Token", "tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code)
	var listing struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &listing))
	tools := tools.List()
	require.Len(t, listing.Tools, len(tools))
	for i, tool := range tools {
		got := listing.Tools[i]
		assert.Equal(t, "function", got.Type)
		assert.Equal(t, tool.Name, got.Function.Name)
		assert.Equal(t, tool.Description, got.Function.Description)
		assert.JSONEq(t, string(tool.InputSchema), string(got.Function.Parameters))
	}
}

func TestHTTPToolCallScreenshotAndErrors(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{
		Server: bridge.ServerOptions{AllowUnauthenticated: true},
		Extension: agentprototest.Options{Handler: agentprototest.Mux{
			agentproto.TypeScreenshot: agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
				return json.RawMessage(`{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,/9j/"}`), nil
			}),
		}},
	})
	h := httpapi.NewHandler(b.Server, nil)
	post := map[string]string{"Content-Type": "application/json"}
	httpCase{method: "POST", target: "/v1/tools/call", body: strings.NewReader(`{"tool":"browser_screenshot"}`), headers: post,
		wantStatus: 200, wantBody: `{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,/9j/"}`}.run(t, h)
	httpCase{method: "POST", target: "/v1/tools/call", body: strings.NewReader(`{"tool":"browser_solve_captcha","arguments":{"type":"auto"}}`), headers: post,
		wantStatus: 500, wantBody: `{"error":"Unknown bridge request: browser.solve_captcha"}`}.run(t, h)
}

// Issue 11, item 1: the event stream's shapes are the reference's.
func TestHTTPEventStreamTaskError(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(context.Context, *agentprototest.Request) (any, error) {
			return nil, errorString("No task a/b")
		})}})
	srv := httptest.NewServer(httpapi.NewHandler(b.Server, nil))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/tasks/a%2Fb/events/", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	want := ": connected\n\nevent: task.error\ndata: {\"taskId\":\"a/b\",\"error\":\"No task a/b\"}\n\n"
	buf := make([]byte, len(want))
	_, err = readFull(resp.Body, buf)
	require.NoError(t, err)
	assert.Equal(t, want, string(buf))
}

// Issue 10, item 6: an empty origin is never allowed by accident, as when
// the host was started without its origin argument.
func TestHTTPNeverAllowsAnEmptyOrigin(t *testing.T) {
	for _, allowed := range [][]string{nil, {""}, {"/"}, {"", "chrome-extension://abc/"}} {
		h, _ := echoAPI(t, &httpapi.HandlerOptions{AllowedOrigins: allowed})
		for _, origin := range []string{"/", "", "//"} {
			httpCase{method: "GET", target: "/v1/tasks", headers: map[string]string{"Authorization": "Bearer tok", "Origin": origin},
				wantStatus: 403, wantBody: `{"error":"Origin not allowed"}`}.run(t, h)
		}
	}
	h, _ := echoAPI(t, &httpapi.HandlerOptions{AllowedOrigins: []string{"", "chrome-extension://abc/"}})
	httpCase{method: "GET", target: "/v1/tasks", headers: map[string]string{"Authorization": "Bearer tok", "Origin": "chrome-extension://abc"},
		wantStatus: 200}.run(t, h)
	httpCase{method: "GET", target: "/v1/tasks", headers: map[string]string{"Authorization": "Bearer tok"},
		wantStatus: 200}.run(t, h)
}
