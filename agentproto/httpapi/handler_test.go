package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTPAPI(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{
		Server: bridge.ServerOptions{Token: "tok"},
		Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
			if r.Type == agentproto.TypeNavigate {
				return nil, errorString("Navigation failed")
			}
			return map[string]any{"type": r.Type, "payload": r.Payload}, nil
		})},
	})
	h := httpapi.NewHandler(b.Server, &httpapi.HandlerOptions{AllowedOrigins: []string{"chrome-extension://pgnpnlnhjmjbmobnchmlaaonbieoelff/"}})
	auth := map[string]string{"Authorization": "Bearer tok"}
	tests := []struct {
		name, method, target, body string
		headers                    map[string]string
		host                       string
		wantStatus                 int
		wantBody                   string
	}{
		{name: "health needs no token", method: "GET", target: "/health", wantStatus: 200,
			wantBody: `{"ok":true,"bridge":"online","extension":"online","authRequired":true}`},
		{name: "no token", method: "GET", target: "/v1/tasks", wantStatus: 401, wantBody: `{"error":"Missing or invalid WebOperator API token"}`},
		{name: "wrong token", method: "GET", target: "/v1/tasks", headers: map[string]string{"Authorization": "Bearer nope"}, wantStatus: 401,
			wantBody: `{"error":"Missing or invalid WebOperator API token"}`},
		{name: "query token refused", method: "GET", target: "/v1/tasks?token=tok", wantStatus: 401,
			wantBody: `{"error":"Tokens in the query string are not accepted: use Authorization: Bearer or X-WebOperator-Token"}`},
		{name: "header token", method: "GET", target: "/v1/tasks", headers: map[string]string{"X-WebOperator-Token": "tok"}, wantStatus: 200,
			wantBody: `{"type":"tasks.list","payload":{}}`},
		{name: "snapshot with query", method: "GET", target: "/v1/browser/snapshot?tabId=4&allElements=true", headers: auth, wantStatus: 200,
			wantBody: `{"type":"browser.snapshot","payload":{"tabId":4,"allElements":true}}`},
		{name: "click body is the payload", method: "POST", target: "/v1/browser/click", body: `{"ref":"@e3","index":2}`,
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"}, wantStatus: 200,
			wantBody: `{"type":"browser.click","payload":{"ref":"@e3","index":2}}`},
		{name: "extension error is 500", method: "POST", target: "/v1/browser/navigate", body: `{"url":"x"}`,
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"}, wantStatus: 500,
			wantBody: `{"error":"Navigation failed"}`},
		{name: "bad JSON is 400", method: "POST", target: "/v1/tasks", body: `{"goal":`,
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"}, wantStatus: 400,
			wantBody: `{"error":"Request body must be JSON"}`},
		{name: "form posts refused (CSRF)", method: "POST", target: "/v1/tasks", body: `{"goal":"x"}`,
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "text/plain"}, wantStatus: 415,
			wantBody: `{"error":"Content-Type must be application/json"}`},
		{name: "confirm merges the path id", method: "POST", target: "/v1/tasks/t%201/confirm", body: `{"allow":true,"id":"other"}`,
			headers: map[string]string{"Authorization": "Bearer tok", "Content-Type": "application/json"}, wantStatus: 200,
			wantBody: `{"type":"tasks.confirm","payload":{"id":"t 1","allow":true}}`},
		{name: "trace is tasks.get", method: "GET", target: "/v1/tasks/abc/trace", headers: auth, wantStatus: 200,
			wantBody: `{"type":"tasks.get","payload":{"id":"abc"}}`},
		{name: "unknown endpoint", method: "GET", target: "/v2/x", headers: auth, wantStatus: 404, wantBody: `{"error":"Unknown endpoint: GET /v2/x"}`},
		{name: "wrong method", method: "GET", target: "/v1/browser/click", headers: auth, wantStatus: 405,
			wantBody: `{"error":"Method not allowed: GET /v1/browser/click"}`},
		{name: "DNS rebinding refused", method: "GET", target: "/health", host: "evil.example:8765", wantStatus: 403,
			wantBody: `{"error":"Host not allowed: the API answers only to loopback host names"}`},
		{name: "web page origin refused", method: "GET", target: "/v1/tasks", headers: map[string]string{"Authorization": "Bearer tok", "Origin": "https://evil.example"},
			wantStatus: 403, wantBody: `{"error":"Origin not allowed"}`},
		{name: "the extension's origin allowed", method: "GET", target: "/v1/tasks",
			headers:    map[string]string{"Authorization": "Bearer tok", "Origin": "chrome-extension://pgnpnlnhjmjbmobnchmlaaonbieoelff"},
			wantStatus: 200, wantBody: `{"type":"tasks.list","payload":{}}`},
		{name: "ipv6 loopback host", method: "GET", target: "/health", host: "[::1]:8765", wantStatus: 200,
			wantBody: `{"ok":true,"bridge":"online","extension":"online","authRequired":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:8765"+tt.target, strings.NewReader(tt.body))
			if tt.host != "" {
				req.Host = tt.host
			}
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tt.wantStatus, rec.Code)
			assert.JSONEq(t, tt.wantBody, rec.Body.String())
		})
	}
}

func TestHTTPTokenNotConfigured(t *testing.T) {
	b := strictBridge(t)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://localhost/v1/tasks", nil)
	httpapi.NewHandler(b.Server, nil).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	var body struct{ Error string }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, agentproto.MsgTokenNotConfigured, body.Error)
}

func TestHTTPEventStream(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(context.Context, *agentprototest.Request) (any, error) {
			return json.RawMessage(`{"id":"t1","status":"running"}`), nil
		})}})
	srv := httptest.NewServer(httpapi.NewHandler(b.Server, nil))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/tasks/t1/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	read := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		_, err := readFull(resp.Body, buf)
		require.NoError(t, err)
		assert.Equal(t, want, string(buf))
	}
	read(": connected\n\n")
	// As the reference: the task wrapped with its id (issue 11, item 1).
	read("event: task.snapshot\ndata: {\"taskId\":\"t1\",\"task\":{\"id\":\"t1\",\"status\":\"running\"}}\n\n")
	require.NoError(t, b.Extension.Emit(json.RawMessage(`{"kind":"task:step","taskId":"other","step":{}}`)))
	require.NoError(t, b.Extension.Emit(json.RawMessage(`{"kind":"task:update","task":{"id":"t1","status":"done"}}`)))
	read("event: task.update\ndata: {\"kind\":\"task:update\",\"task\":{\"id\":\"t1\",\"status\":\"done\"}}\n\n")
	cancel()
}

func readFull(r interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Server.Close abandons HTTP requests in flight as it does socket ones: an
// ExtensionFunc waiting on its context is released at once, and Close
// does not sit out the request's timeout.
func TestCloseAbandonsHTTPRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		srv := bridge.NewServer(&bridge.ServerOptions{AllowUnauthenticated: true,
			Extension: bridge.ExtensionFunc(func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error) {
				close(entered)
				<-ctx.Done()
				return nil, ctx.Err()
			})})
		h := httpapi.NewHandler(srv, nil)
		rec := httptest.NewRecorder()
		served := make(chan struct{})
		go func() {
			defer close(served)
			h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/v1/tasks", nil))
		}()
		<-entered
		start := time.Now()
		require.NoError(t, srv.Close())
		assert.Zero(t, time.Since(start), "Close waited for the request's timeout")
		<-served
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.JSONEq(t, `{"error":"Bridge is shutting down"}`, rec.Body.String())
	})
}

// chunkWriter is an http.ResponseWriter that hands each write over a
// channel, for event streams inside synctest bubbles.
type chunkWriter struct {
	header http.Header
	chunks chan string
}

func (w *chunkWriter) Header() http.Header { return w.header }
func (w *chunkWriter) WriteHeader(int)     {}
func (w *chunkWriter) Flush()              {}
func (w *chunkWriter) Write(p []byte) (int, error) {
	w.chunks <- string(p)
	return len(p), nil
}

func TestHTTPEventStreamHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{NoHello: true}})
		defer b.Close()
		h := httpapi.NewHandler(b.Server, nil)
		w := &chunkWriter{header: http.Header{}, chunks: make(chan string)}
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan struct{})
		go func() {
			defer close(served)
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, "GET", "http://127.0.0.1/v1/tasks/t1/events", nil))
		}()
		start := time.Now()
		assert.Equal(t, ": connected\n\n", <-w.chunks)
		assert.Equal(t, "event: bridge.status\ndata: {\"bridge\":\"online\",\"extension\":\"offline\"}\n\n", <-w.chunks)
		for i := 1; i <= 2; i++ {
			got := <-w.chunks
			assert.Equal(t, time.Duration(i)*15*time.Second, time.Since(start), "a heartbeat every 15 s")
			assert.Equal(t, fmt.Sprintf("event: heartbeat\ndata: {\"at\":%d}\n\n", time.Now().UnixMilli()), got)
		}
		cancel()
		<-served
	})
}
