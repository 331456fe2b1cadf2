package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testOrigin = "https://shop.example"

// testSite is a Handler over the spec manifest with in-memory handlers.
type testSite struct {
	h        *Handler
	mu       sync.Mutex
	cart     []string
	calls    int
	signedIn bool
}

func newTestSite(t testing.TB, opts *HandlerOptions) *testSite {
	t.Helper()
	s := &testSite{signedIn: true}
	o := HandlerOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Origin == "" {
		o.Origin = testOrigin
	}
	m := specManifest(t)
	actions := map[string]ActionHandler{
		"catalog.find": ActionFunc(func(ctx context.Context, req *ActionRequest) (any, error) {
			var in struct {
				Query string `json:"query"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			s.count()
			if in.Query == "boom" {
				return nil, errors.New("db: connection refused to 10.0.0.5:5432 password=hunter2")
			}
			return map[string]string{"productId": "kbd-75"}, nil
		}),
		"cart.add": ActionFunc(func(ctx context.Context, req *ActionRequest) (any, error) {
			s.count()
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.signedIn {
				return nil, &Error{Status: 401, Code: "unauthorized", Message: "Sign in first."}
			}
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			s.cart = append(s.cart, in.ProductID)
			return map[string]bool{"added": true}, nil
		}),
		"cart.state": ActionFunc(func(ctx context.Context, req *ActionRequest) (any, error) {
			s.count()
			s.mu.Lock()
			defer s.mu.Unlock()
			items := []map[string]any{}
			for _, p := range s.cart {
				items = append(items, map[string]any{"productId": p, "quantity": 1})
			}
			return map[string]any{"items": items}, nil
		}),
	}
	h, err := NewHandler(m, actions, &o)
	require.NoError(t, err)
	s.h = h
	return s
}

func (s *testSite) count() {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
}

const specBatch = `{"version":"0.1","operations":[
 {"id":"find","action":"catalog.find","input":{"query":"wireless keyboard"}},
 {"id":"add","action":"cart.add","input":{"productId":{"$ref":"find.productId"}}},
 {"id":"verify","action":"cart.state","input":{}}]}`

func post(h http.Handler, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, testOrigin+"/api/agent/workflow", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decodeEnvelope(t *testing.T, rec *httptest.ResponseRecorder) Response {
	t.Helper()
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var r Response
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r), rec.Body.String())
	assert.Equal(t, Protocol, r.Protocol)
	assert.NotZero(t, r.Pacing.MaxConcurrency, "every response carries pacing")
	if !r.OK {
		assert.NotEmpty(t, r.Error, "a failure has a top-level string error")
		assert.NotEmpty(t, r.Code)
	}
	return r
}

func TestHandlerSpecBatch(t *testing.T) {
	s := newTestSite(t, nil)
	rec := post(s.h, specBatch, nil)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"ok":true,"protocol":"webagents/0.1","pacing":{"minIntervalMs":120,"maxConcurrency":2},
		"results":{"find":{"productId":"kbd-75"},"add":{"added":true},"verify":{"items":[{"productId":"kbd-75","quantity":1}]}}}`,
		rec.Body.String())
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	assert.Empty(t, rec.Header().Get("Access-Control-Allow-Origin"))
}

func TestHandlerFailureEnvelope(t *testing.T) {
	s := newTestSite(t, nil)
	s.signedIn = false
	rec := post(s.h, specBatch, nil)
	require.Equal(t, 401, rec.Code)
	assert.JSONEq(t, `{"ok":false,"protocol":"webagents/0.1","pacing":{"minIntervalMs":120,"maxConcurrency":2},
		"error":"Sign in first.","code":"unauthorized","operation":"add",
		"results":{"find":{"productId":"kbd-75"}},
		"errors":{"add":{"code":"unauthorized","message":"Sign in first.","status":401}},
		"skipped":["verify"]}`, rec.Body.String())
}

func TestHandlerInternalsNeverLeak(t *testing.T) {
	s := newTestSite(t, nil)
	rec := post(s.h, `{"version":"0.1","operations":[{"id":"a","action":"catalog.find","input":{"query":"boom"}}]}`, nil)
	require.Equal(t, 500, rec.Code)
	r := decodeEnvelope(t, rec)
	assert.Equal(t, CodeInternal, r.Code)
	assert.NotContains(t, rec.Body.String(), "hunter2")
	assert.NotContains(t, rec.Body.String(), "10.0.0.5")
}

// TestHandlerRequestCodes reaches every request-level code over HTTP.
func TestHandlerRequestCodes(t *testing.T) {
	s := newTestSite(t, nil)
	one := func(action, input string) string {
		return `{"version":"0.1","operations":[{"id":"a","action":"` + action + `","input":` + input + `}]}`
	}
	tests := []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
		code   Code
	}{
		{"bad JSON", `{"version":`, nil, 400, CodeInvalidRequest},
		{"empty body", ``, nil, 400, CodeInvalidRequest},
		{"duplicate key", `{"version":"0.1","operations":[{"id":"a","id":"b","action":"cart.state"}]}`, nil, 400, CodeInvalidRequest},
		{"unsupported version", `{"version":"1.0","operations":[{"id":"a","action":"cart.state"}]}`, nil, 400, CodeUnsupportedVersion},
		{"duplicate ids", `{"version":"0.1","operations":[` + strings.Repeat(`{"id":"a","action":"cart.state"},`, 8) + `{"id":"z","action":"cart.state"}]}`, nil, 400, CodeInvalidRequest},
		{"too many (unique ids)", manyStates(9), nil, 400, CodeTooManyOperations},
		{"unknown action", one("admin.drop", `{}`), nil, 400, CodeUnknownAction},
		{"out of scope for the Referer", one("cart.state", `{}`), map[string]string{"Referer": testOrigin + "/about"}, 400, CodeUnknownAction},
		{"in scope for the Referer", one("cart.state", `{}`), map[string]string{"Referer": testOrigin + "/products/kbd-75"}, 200, ""},
		{"invalid input", one("catalog.find", `{"query":7}`), nil, 400, CodeInvalidInput},
		{"invalid graph", `{"version":"0.1","operations":[{"id":"a","action":"cart.state","dependsOn":["a"]}]}`, nil, 400, CodeInvalidGraph},
		{"unresolved reference", `{"version":"0.1","operations":[{"id":"f","action":"catalog.find","input":{"query":"x"}},
			{"id":"a","action":"cart.add","input":{"productId":{"$ref":"f.nothing"}}}]}`, nil, 400, CodeUnresolvedReference},
		{"payload too large", one("cart.state", `{"pad":"`+strings.Repeat("x", DefaultMaxBodyChars)+`"}`), nil, 413, CodePayloadTooLarge},
		{"payload too large by code points", one("cart.state", `{"pad":"`+strings.Repeat("é", DefaultMaxBodyChars)+`"}`), nil, 413, CodePayloadTooLarge},
		{"text/plain", specBatch, map[string]string{"Content-Type": "text/plain"}, 415, CodeUnsupportedMediaType},
		{"form", specBatch, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, CodeUnsupportedMediaType},
		{"no content type", specBatch, map[string]string{"Content-Type": ""}, 415, CodeUnsupportedMediaType},
		{"json with charset", one("cart.state", `{}`), map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, ""},
		{"json with other charset", specBatch, map[string]string{"Content-Type": "application/json; charset=latin1"}, 415, CodeUnsupportedMediaType},
		{"bad idempotency key", specBatch, map[string]string{"Idempotency-Key": `"a b"`}, 400, CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := post(s.h, tt.body, tt.hdr)
			assert.Equal(t, tt.status, rec.Code, rec.Body.String())
			r := decodeEnvelope(t, rec)
			assert.Equal(t, tt.code, r.Code)
		})
	}
}

func manyStates(n int) string {
	var list []string
	for i := 0; i < n; i++ {
		list = append(list, `{"id":"s`+string(rune('a'+i))+`","action":"cart.state"}`)
	}
	return ops(list...)
}

// TestHandlerCSRFMatrix: what a browser attacker can and cannot send.
func TestHandlerCSRFMatrix(t *testing.T) {
	s := newTestSite(t, nil)
	state := `{"version":"0.1","operations":[{"id":"a","action":"cart.state"}]}`
	tests := []struct {
		name   string
		method string
		hdr    map[string]string
		status int
		code   Code
	}{
		{"same origin", "POST", map[string]string{"Origin": testOrigin, "Sec-Fetch-Site": "same-origin"}, 200, ""},
		{"no Origin (non-browser)", "POST", nil, 200, ""},
		{"same-site allowed", "POST", map[string]string{"Sec-Fetch-Site": "same-site"}, 200, ""},
		{"cross origin", "POST", map[string]string{"Origin": "https://evil.example"}, 403, CodeForbiddenOrigin},
		{"origin differing in scheme", "POST", map[string]string{"Origin": "http://shop.example"}, 403, CodeForbiddenOrigin},
		{"origin differing in port", "POST", map[string]string{"Origin": "https://shop.example:8443"}, 403, CodeForbiddenOrigin},
		{"null origin", "POST", map[string]string{"Origin": "null"}, 403, CodeForbiddenOrigin},
		{"cross-site fetch", "POST", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, CodeForbiddenOrigin},
		{"cross-site form", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}, 403, CodeForbiddenOrigin},
		{"same-origin form", "POST", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, CodeUnsupportedMediaType},
		{"forwarded host ignored", "POST", map[string]string{"Origin": "https://evil.example", "X-Forwarded-Host": "evil.example", "Host": "evil.example"}, 403, CodeForbiddenOrigin},
		{"preflight", "OPTIONS", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 405, CodeMethodNotAllowed},
		{"GET", "GET", nil, 405, CodeMethodNotAllowed},
		{"HEAD", "HEAD", nil, 405, CodeMethodNotAllowed},
		{"PUT", "PUT", nil, 405, CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, testOrigin+"/api/agent/workflow", strings.NewReader(state))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			if h := tt.hdr["Host"]; h != "" {
				req.Host = h
			}
			rec := httptest.NewRecorder()
			s.h.ServeHTTP(rec, req)
			assert.Equal(t, tt.status, rec.Code, rec.Body.String())
			r := decodeEnvelope(t, rec)
			assert.Equal(t, tt.code, r.Code)
			for k := range rec.Header() {
				assert.NotContains(t, strings.ToLower(k), "access-control", "no CORS headers at all")
			}
			if tt.status == 405 {
				assert.Equal(t, "POST", rec.Header().Get("Allow"))
			}
			assert.Empty(t, rec.Header().Get("Location"), "never redirects")
		})
	}
}

// TestHandlerDiscoveryMatrix: GET and HEAD of both documents.
func TestHandlerDiscoveryMatrix(t *testing.T) {
	s := newTestSite(t, nil)
	bodies := map[string]string{}
	for _, tt := range []struct {
		path, contentType string
	}{{MarkdownPath, "text/markdown; charset=utf-8"}, {WellKnownPath, "application/json"}} {
		get := httptest.NewRecorder()
		s.h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, testOrigin+tt.path, nil))
		head := httptest.NewRecorder()
		s.h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, testOrigin+tt.path, nil))
		assert.Equal(t, 200, get.Code)
		assert.Equal(t, 200, head.Code)
		assert.Equal(t, tt.contentType, get.Header().Get("Content-Type"))
		assert.Equal(t, get.Header(), head.Header(), "HEAD has the same headers")
		assert.Empty(t, head.Body.Bytes(), "HEAD has no body")
		assert.Equal(t, get.Header().Get("Content-Length"), itoa(get.Body.Len()))
		bodies[tt.path] = get.Body.String()

		post := httptest.NewRecorder()
		s.h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, testOrigin+tt.path, nil))
		assert.Equal(t, 405, post.Code)
		assert.Equal(t, "GET, HEAD", post.Header().Get("Allow"))
	}
	md, _, err := extractManifest([]byte(bodies[MarkdownPath]), true)
	require.NoError(t, err)
	assert.True(t, sameJSON(md, []byte(bodies[WellKnownPath])), "both documents carry the same manifest")

	nf := httptest.NewRecorder()
	s.h.ServeHTTP(nf, httptest.NewRequest(http.MethodGet, testOrigin+"/other", nil))
	assert.Equal(t, 404, nf.Code)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestNewHandlerErrors(t *testing.T) {
	m := specManifest(t)
	noop := ActionFunc(func(context.Context, *ActionRequest) (any, error) { return nil, nil })
	all := map[string]ActionHandler{"catalog.find": noop, "cart.add": noop, "cart.state": noop}
	cross := manifestWith(t, "", `{"a":{}}`)
	cross.Workflow.Endpoint = "https://evil.example/api"
	tests := []struct {
		name     string
		manifest *Manifest
		actions  map[string]ActionHandler
		opts     *HandlerOptions
	}{
		{"no manifest", nil, all, &HandlerOptions{Origin: testOrigin}},
		{"no actions", m, nil, &HandlerOptions{Origin: testOrigin}},
		{"bad origin", m, all, &HandlerOptions{Origin: "https://shop.example/path"}},
		{"ftp origin", m, all, &HandlerOptions{Origin: "ftp://shop.example"}},
		{"missing handler", m, map[string]ActionHandler{"cart.add": noop}, &HandlerOptions{Origin: testOrigin}},
		{"unpublished handler", m, map[string]ActionHandler{
			"catalog.find": noop, "cart.add": noop, "cart.state": noop, "admin.drop": noop}, &HandlerOptions{Origin: testOrigin}},
		{"cross-origin endpoint", cross, map[string]ActionHandler{"a": noop}, &HandlerOptions{Origin: testOrigin}},
		{"body limit below protocol", m, all, &HandlerOptions{Origin: testOrigin, MaxBodyChars: 1000}},
		{"result limit above the transport cap", m, all, &HandlerOptions{Origin: testOrigin, MaxResultBytes: TransportLimitBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHandler(tt.manifest, tt.actions, tt.opts)
			assert.Error(t, err)
		})
	}
	// Options are optional: nil means every default (a loopback origin).
	_, err := NewHandler(m, all, nil)
	assert.NoError(t, err)
	// A manifest built in Go is validated too.
	bad := &Manifest{Version: "0.1", Workflow: Workflow{Endpoint: "/e", MaxOperations: 99},
		Actions: map[string]*Action{"a": {Effect: "nope"}}}
	_, err = NewHandler(bad, map[string]ActionHandler{"a": noop}, &HandlerOptions{Origin: testOrigin})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.GreaterOrEqual(t, len(ve.Problems), 2)
}

func TestHandlerLoopbackOrigin(t *testing.T) {
	m := manifestWith(t, "", `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{
		"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return "ok", nil })}, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
	send := func(origin string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/agent/workflow", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 200, send(srv.URL), "the listener's loopback address is the public origin")
	assert.Equal(t, 403, send("http://localhost:1"))

	// Not on a loopback address (simulated): refused.
	rec := post(h, body, nil)
	assert.Equal(t, 403, rec.Code)
}

func TestHandlerContextHook(t *testing.T) {
	type userKey struct{}
	m := manifestWith(t, "", `{"me":{}}`)
	var seen string
	h, err := NewHandler(m, map[string]ActionHandler{"me": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
		seen, _ = ctx.Value(userKey{}).(string)
		return seen, nil
	})}, &HandlerOptions{Origin: testOrigin, Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			http.SetCookie(w, &http.Cookie{Name: "seen", Value: "1"})
			return context.WithValue(r.Context(), userKey{}, "alice"), nil
		case "Bearer expired":
			return nil, &Error{Status: 401, Code: "unauthorized", Message: "Session expired."}
		default:
			return nil, errors.New("session store down: redis://secret@10.1.1.1")
		}
	},
	})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"me"}]}`
	rec := post(h, body, map[string]string{"Authorization": "Bearer good"})
	assert.Equal(t, 200, rec.Code)
	assert.Equal(t, "alice", seen)
	assert.Contains(t, rec.Header().Get("Set-Cookie"), "seen=1")
	rec = post(h, body, map[string]string{"Authorization": "Bearer expired"})
	assert.Equal(t, 401, rec.Code)
	assert.Equal(t, CodeUnauthorized, decodeEnvelope(t, rec).Code)
	rec = post(h, body, nil)
	assert.Equal(t, 500, rec.Code)
	assert.NotContains(t, rec.Body.String(), "secret")
}

func TestHandlerIdempotency(t *testing.T) {
	s := newTestSite(t, nil)
	key := map[string]string{"Idempotency-Key": `"order-1"`}
	first := post(s.h, specBatch, key)
	require.Equal(t, 200, first.Code)
	calls := s.calls
	replay := post(s.h, specBatch, key)
	assert.Equal(t, 200, replay.Code)
	assert.Equal(t, first.Body.String(), replay.Body.String(), "the stored body, unchanged")
	assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, calls, s.calls, "executed at most once")
	assert.Len(t, s.cart, 1)

	reused := post(s.h, `{"version":"0.1","operations":[{"id":"v","action":"cart.state"}]}`, key)
	assert.Equal(t, 422, reused.Code)
	assert.Equal(t, CodeIdempotencyKeyReused, decodeEnvelope(t, reused).Code)

	// Another client address is another scope.
	req := httptest.NewRequest(http.MethodPost, testOrigin+"/api/agent/workflow", strings.NewReader(specBatch))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-1")
	req.RemoteAddr = "192.0.2.99:1234"
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	assert.Equal(t, 200, rec.Code)
	assert.Empty(t, rec.Header().Get("Idempotent-Replayed"))
	assert.Len(t, s.cart, 2)

	// Failures are stored too: a retry does not run the batch again.
	s.signedIn = false
	k2 := map[string]string{"Idempotency-Key": "order-2"}
	assert.Equal(t, 401, post(s.h, specBatch, k2).Code)
	s.signedIn = true
	again := post(s.h, specBatch, k2)
	assert.Equal(t, 401, again.Code)
	assert.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))
}

func TestHandlerIdempotencyInProgress(t *testing.T) {
	m := manifestWith(t, "", `{"slow":{"effect":"write"}}`)
	release := make(chan struct{})
	started := make(chan struct{})
	h, err := NewHandler(m, map[string]ActionHandler{
		"slow": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
			close(started)
			<-release
			return "done", nil
		})}, &HandlerOptions{Origin: testOrigin})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"slow"}]}`
	key := map[string]string{"Idempotency-Key": "k"}
	done := make(chan int)
	go func() { done <- post(h, body, key).Code }()
	<-started
	rec := post(h, body, key)
	assert.Equal(t, 409, rec.Code)
	assert.Equal(t, CodeIdempotencyInProgress, decodeEnvelope(t, rec).Code)
	// Retry-After: the running batch's remaining deadline (30 s by default).
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retry >= 29 && retry <= 30, "Retry-After %d", retry)
	close(release)
	assert.Equal(t, 200, <-done)
	assert.Equal(t, "true", post(h, body, key).Header().Get("Idempotent-Replayed"))
}

func TestHandlerIdempotencySessionScope(t *testing.T) {
	m := manifestWith(t, "", `{"w":{"effect":"write"}}`)
	var calls int
	var mu sync.Mutex
	h, err := NewHandler(m, map[string]ActionHandler{"w": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return calls, nil
	})}, &HandlerOptions{Origin: testOrigin, Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
		return WithSessionKey(r.Context(), r.Header.Get("X-Session")), nil
	},
	})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"w"}]}`
	post(h, body, map[string]string{"Idempotency-Key": "k", "X-Session": "alice"})
	post(h, body, map[string]string{"Idempotency-Key": "k", "X-Session": "alice"})
	post(h, body, map[string]string{"Idempotency-Key": "k", "X-Session": "bob"})
	assert.Equal(t, 2, calls, "once per (session, key)")
}

// reserve is a reservation of key by client for an hour.
func reserve(key, client string, fp [32]byte) IdempotencyReservation {
	return IdempotencyReservation{Key: key, Client: client, Fingerprint: fp, TTL: time.Hour, Token: "token-" + key}
}

func TestMemoryIdempotencyStoreWindowAndBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := NewMemoryIdempotencyStore(&MemoryIdempotencyStoreOptions{MaxEntries: 2, MaxClientEntries: 2})
		fp := [32]byte{1}
		rec, err := s.Reserve(ctx, reserve("a", "c1", fp))
		require.NoError(t, err)
		assert.Nil(t, rec)
		rec, err = s.Reserve(ctx, reserve("a", "c1", fp))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.False(t, rec.Completed)
		require.NoError(t, s.Complete(ctx, reserve("a", "c1", fp), IdempotencyRecord{Fingerprint: fp, Status: 200, Body: []byte("x")}))
		time.Sleep(time.Minute)
		_, err = s.Reserve(ctx, reserve("b", "c1", fp))
		require.NoError(t, err)
		// Full: a completed record inside its window is never evicted; the
		// request is refused until the oldest record expires.
		rec, err = s.Reserve(ctx, reserve("c", "c2", fp))
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Nil(t, rec)
		assert.Equal(t, CodeIdempotencyUnavailable, e.Code)
		assert.Equal(t, 503, e.HTTPStatus())
		assert.Equal(t, time.Hour-time.Minute, e.RetryAfter, "until the oldest record expires")
		rec, err = s.Reserve(ctx, reserve("a", "c1", fp))
		require.NoError(t, err)
		require.NotNil(t, rec, "the completed record is still there")
		assert.True(t, rec.Completed)
		// Released and expired entries go.
		require.NoError(t, s.Release(ctx, reserve("b", "c1", fp)))
		assert.Equal(t, 1, s.Len())
		time.Sleep(2 * time.Hour)
		rec, err = s.Reserve(ctx, reserve("a", "c1", fp))
		require.NoError(t, err)
		assert.Nil(t, rec, "an expired key is new again")
		assert.Equal(t, 1, s.Len())
		assert.Zero(t, s.Bytes(), "the expired body is no longer counted")
	})
}

// TestMemoryIdempotencyStoreToken: only the request holding a reservation
// completes or releases it; one whose record expired and was taken over by
// another request cannot overwrite or drop the newer one.
func TestMemoryIdempotencyStoreToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := NewMemoryIdempotencyStore(nil)
		first := reserve("k", "c", [32]byte{1})
		first.TTL = time.Minute
		_, err := s.Reserve(ctx, first)
		require.NoError(t, err)
		time.Sleep(2 * time.Minute) // first's batch outlived its record
		second := reserve("k", "c", [32]byte{1})
		second.Token = "second"
		rec, err := s.Reserve(ctx, second)
		require.NoError(t, err)
		require.Nil(t, rec, "the expired key is taken over")
		require.NoError(t, s.Complete(ctx, first, IdempotencyRecord{Status: 500, Body: []byte("stale")}))
		require.NoError(t, s.Release(ctx, first))
		rec, err = s.Reserve(ctx, second)
		require.NoError(t, err)
		require.NotNil(t, rec, "the second reservation survives the first's release")
		assert.False(t, rec.Completed, "and the first's completion")
		require.NoError(t, s.Complete(ctx, second, IdempotencyRecord{Status: 200, Body: []byte("ok")}))
		rec, err = s.Reserve(ctx, second)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, []byte("ok"), rec.Body)
	})
}

// TestMemoryIdempotencyStoreBytes: the store is bounded by the bytes of
// stored responses, overall and per client, not only by keys.
func TestMemoryIdempotencyStoreBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := NewMemoryIdempotencyStore(&MemoryIdempotencyStoreOptions{MaxBytes: 1000, MaxClientBytes: 600})
		big := make([]byte, 600)
		_, err := s.Reserve(ctx, reserve("a", "c1", [32]byte{}))
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, reserve("a", "c1", [32]byte{}), IdempotencyRecord{Status: 200, Body: big}))
		assert.Equal(t, 600, s.Bytes())
		_, err = s.Reserve(ctx, reserve("b", "c1", [32]byte{}))
		assert.ErrorIs(t, err, &Error{Code: CodeIdempotencyUnavailable}, "c1 holds its byte share")
		_, err = s.Reserve(ctx, reserve("b", "c2", [32]byte{}))
		require.NoError(t, err, "another client still has room")
		require.NoError(t, s.Complete(ctx, reserve("b", "c2", [32]byte{}), IdempotencyRecord{Status: 200, Body: big}))
		_, err = s.Reserve(ctx, reserve("c", "c3", [32]byte{}))
		assert.ErrorIs(t, err, &Error{Code: CodeIdempotencyUnavailable}, "the store holds its bytes")
		time.Sleep(time.Hour)
		_, err = s.Reserve(ctx, reserve("c", "c3", [32]byte{}))
		require.NoError(t, err, "expiry frees the bytes")
		assert.Zero(t, s.Bytes())
	})
}

func TestHandlerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifestWith(t, "", `{"slow":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"slow": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})}, &HandlerOptions{Origin: testOrigin, Deadline: 2 * time.Second})
		require.NoError(t, err)
		start := time.Now()
		rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"slow"}]}`, nil)
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, 504, rec.Code)
		assert.Equal(t, CodeTimeout, decodeEnvelope(t, rec).Code)
	})
}

func TestHandlerRateLimited(t *testing.T) {
	m := manifestWith(t, "", `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, Limiter: limiterFunc(func(context.Context, string) error {
		return &Error{Status: 429, Code: CodeRateLimited, Message: "Slow down."}
	}),
	})
	require.NoError(t, err)
	rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`, nil)
	assert.Equal(t, 429, rec.Code)
	r := decodeEnvelope(t, rec)
	assert.Equal(t, CodeRateLimited, r.Code)
	assert.Equal(t, "x", r.Operation)
}

type limiterFunc func(ctx context.Context, session string) error

func (f limiterFunc) Wait(ctx context.Context, session string) error { return f(ctx, session) }

func TestHandlerResultTooLarge(t *testing.T) {
	m := manifestWith(t, "", `{"big":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"big": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
		return strings.Repeat("x", 200), nil
	})}, &HandlerOptions{Origin: testOrigin, MaxResultBytes: 100})
	require.NoError(t, err)
	rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"big"}]}`, nil)
	assert.Equal(t, 500, rec.Code)
	assert.Equal(t, CodeResultTooLarge, decodeEnvelope(t, rec).Code)
}

func TestHandlerReferencesDisabled(t *testing.T) {
	m := manifestWith(t, `"references":false`, `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin})
	require.NoError(t, err)
	rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"a"},{"id":"y","action":"a","input":{"v":{"$ref":"x"}}}]}`, nil)
	assert.Equal(t, 400, rec.Code)
	assert.Equal(t, CodeReferencesDisabled, decodeEnvelope(t, rec).Code)
}

func TestHandlerLimiterScope(t *testing.T) {
	m := manifestWith(t, "", `{"a":{}}`)
	var mu sync.Mutex
	var scopes []string
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
		return WithSessionKey(r.Context(), r.Header.Get("X-Session")), nil
	},
		Limiter: limiterFunc(func(_ context.Context, scope string) error {
			mu.Lock()
			defer mu.Unlock()
			scopes = append(scopes, scope)
			return nil
		}),
	})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
	post(h, body, map[string]string{"X-Session": "alice"})
	post(h, body, nil) // no session: paced by client address
	assert.Equal(t, []string{"session:alice", "addr:192.0.2.1"}, scopes)
}

// TestHandlerIdempotencyStoresOnlyExecutedBatches: a request refused before
// any operation ran (rate limited, invalid) leaves the key unused, so the
// agent's retry with the same key runs instead of replaying the refusal for
// the whole window.
func TestHandlerIdempotencyStoresOnlyExecutedBatches(t *testing.T) {
	m := manifestWith(t, "", `{"w":{"effect":"write"},"s":{"inputSchema":{"type":"object","required":["q"]}}}`)
	var mu sync.Mutex
	refuse, calls := true, 0
	h, err := NewHandler(m, map[string]ActionHandler{
		"w": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return calls, nil
		}),
		"s": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil }),
	}, &HandlerOptions{Origin: testOrigin, Limiter: limiterFunc(func(context.Context, string) error {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			refuse = false
			return &Error{Status: 429, Code: CodeRateLimited, Message: "Slow down."}
		}
		return nil
	}),
	})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"w"}]}`
	key := map[string]string{"Idempotency-Key": "k1"}
	first := post(h, body, key)
	require.Equal(t, 429, first.Code)
	retry := post(h, body, key)
	assert.Equal(t, 200, retry.Code, retry.Body.String())
	assert.Empty(t, retry.Header().Get("Idempotent-Replayed"), "the refusal was not stored")
	again := post(h, body, key)
	assert.Equal(t, "true", again.Header().Get("Idempotent-Replayed"), "the executed batch is stored")
	assert.Equal(t, 1, calls, "executed once")

	// A batch refused by validation ran nothing either: the key stays free.
	k2 := map[string]string{"Idempotency-Key": "k2"}
	bad := post(h, `{"version":"0.1","operations":[{"id":"x","action":"s"}]}`, k2)
	require.Equal(t, 400, bad.Code)
	good := post(h, `{"version":"0.1","operations":[{"id":"x","action":"s","input":{"q":1}}]}`, k2)
	assert.Equal(t, 200, good.Code, "not 422: the key was never used by an executed batch")
}

// TestMemoryIdempotencyStoreZeroValue: like the standard library's types,
// the zero value is ready to use (with the default capacity).
func TestMemoryIdempotencyStoreZeroValue(t *testing.T) {
	ctx := t.Context()
	var s MemoryIdempotencyStore
	fp := [32]byte{7}
	rec, err := s.Reserve(ctx, reserve("k", "c", fp))
	require.NoError(t, err)
	assert.Nil(t, rec, "reserved")
	require.NoError(t, s.Complete(ctx, reserve("k", "c", fp), IdempotencyRecord{Fingerprint: fp, Status: 200, Body: []byte("{}")}))
	rec, err = s.Reserve(ctx, reserve("k", "c", fp))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.True(t, rec.Completed)
	assert.NotPanics(t, func() { _ = new(MemoryIdempotencyStore).Complete(ctx, reserve("x", "c", fp), IdempotencyRecord{}) })
	assert.NoError(t, new(MemoryIdempotencyStore).Release(ctx, reserve("x", "c", fp)))
	assert.Zero(t, new(MemoryIdempotencyStore).Len())
}

// TestMemoryIdempotencyStoreReleaseFreesMemory: keys released (every
// request refused before it ran) or reserved again after expiry must not
// pile up in the store's bookkeeping while the store never fills.
func TestMemoryIdempotencyStoreReleaseFreesMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := NewMemoryIdempotencyStore(&MemoryIdempotencyStoreOptions{MaxEntries: 100})
		for i := range 10_000 {
			key := fmt.Sprintf("k%d", i)
			_, err := s.Reserve(ctx, reserve(key, "c", [32]byte{}))
			require.NoError(t, err)
			require.NoError(t, s.Release(ctx, reserve(key, "c", [32]byte{})))
		}
		for range 1_000 {
			r := reserve("same", "c", [32]byte{})
			r.TTL = time.Minute
			_, err := s.Reserve(ctx, r)
			require.NoError(t, err)
			time.Sleep(2 * time.Minute)
		}
		assert.Equal(t, 1, s.Len())
		assert.LessOrEqual(t, len(s.order), 2*s.max, "bookkeeping is bounded by the capacity")
	})
}

type failingStore struct{ *MemoryIdempotencyStore }

func (*failingStore) Reserve(context.Context, IdempotencyReservation) (*IdempotencyRecord, error) {
	return nil, errors.New("store down: redis://user:secret@10.0.0.9")
}

// TestHandlerIdempotencyStoreFailure: a failing store is reported as
// internal to the agent and logged as a store failure (not as the context
// hook's) for the operator.
func TestHandlerIdempotencyStoreFailure(t *testing.T) {
	var logs strings.Builder
	m := manifestWith(t, "", `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: &failingStore{new(MemoryIdempotencyStore)},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`, map[string]string{"Idempotency-Key": "k"})
	assert.Equal(t, 500, rec.Code)
	assert.Equal(t, CodeInternal, decodeEnvelope(t, rec).Code)
	assert.NotContains(t, rec.Body.String(), "secret")
	assert.Contains(t, logs.String(), "idempotency store")
	assert.NotContains(t, logs.String(), "context hook")
}

// TestHandlerIdempotencyFloodKeepsVictimRecord is issue 10's attack: one
// anonymous client sends 10,050 keyed batches in 2 s to push a victim's
// stored order out of the store, so that the victim's retry runs the
// irreversible action again. The victim's record is never evicted inside
// its window: the retry is a replay, and the attacker gets refusals once it
// holds its share.
func TestHandlerIdempotencyFloodKeepsVictimRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := manifestWith(t, "", `{"order.place":{"effect":"irreversible"}}`)
		var mu sync.Mutex
		orders := map[string]int{}
		h, err := NewHandler(m, map[string]ActionHandler{
			"order.place": ActionFunc(func(_ context.Context, req *ActionRequest) (any, error) {
				var in struct {
					Who string `json:"who"`
				}
				if err := req.Decode(&in); err != nil {
					return nil, err
				}
				mu.Lock()
				defer mu.Unlock()
				orders[in.Who]++
				return map[string]int{"order": orders[in.Who]}, nil
			})}, &HandlerOptions{Origin: testOrigin})
		require.NoError(t, err)
		send := func(addr, key, who string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, testOrigin+"/api/agent/workflow",
				strings.NewReader(`{"version":"0.1","operations":[{"id":"o","action":"order.place","input":{"who":"`+who+`"}}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			req.RemoteAddr = addr
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		victim := send("198.51.100.7:40000", "order-1", "victim")
		require.Equal(t, 200, victim.Code, victim.Body.String())

		refused := 0
		for i := range 10_050 {
			rec := send("203.0.113.66:50000", fmt.Sprintf("flood-%d", i), "attacker")
			if rec.Code == http.StatusServiceUnavailable {
				refused++
				assert.Equal(t, CodeIdempotencyUnavailable, decodeEnvelope(t, rec).Code)
				assert.NotEmpty(t, rec.Header().Get("Retry-After"))
			} else {
				require.Equal(t, 200, rec.Code, rec.Body.String())
			}
			time.Sleep(2 * time.Second / 10_050)
		}
		assert.Equal(t, 10_050-DefaultIdempotencyEntries/DefaultIdempotencyClientShare, refused,
			"the attacker holds at most its share of the store")

		retry := send("198.51.100.7:40000", "order-1", "victim")
		assert.Equal(t, 200, retry.Code)
		assert.Equal(t, "true", retry.Header().Get("Idempotent-Replayed"), "the victim's retry is a replay")
		assert.Equal(t, victim.Body.String(), retry.Body.String())
		assert.Equal(t, 1, orders["victim"], "the order was placed once")

		// A third client still gets a key while the attacker is refused.
		other := send("192.0.2.200:1000", "k", "other")
		assert.Equal(t, 200, other.Code)
		assert.Empty(t, other.Header().Get("Idempotent-Replayed"))
	})
}

// TestHandlerAddressPacing is issue 10 item 8: batches that each carry a
// fresh anonymous session are paced by client address as well, so a client
// cannot escape cross-batch pacing by taking a new cookie per batch. The
// model is configurable: signed-in sessions are paced by session only,
// unless PaceAllByAddress; PaceSessionsOnly turns address pacing off.
func TestHandlerAddressPacing(t *testing.T) {
	const interval = 100 * time.Millisecond
	for _, tc := range []struct {
		name      string
		mode      AddressPacing
		anonymous bool
		paced     bool
	}{
		{"anonymous sessions, default", PaceAnonymousByAddress, true, true},
		{"signed-in sessions, default", PaceAnonymousByAddress, false, false},
		{"signed-in sessions, all by address", PaceAllByAddress, false, true},
		{"anonymous sessions, sessions only", PaceSessionsOnly, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := manifestWith(t, `"pacing":{"minIntervalMs":100,"maxConcurrency":1}`, `{"a":{}}`)
				var mu sync.Mutex
				var starts []time.Time
				h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(_ context.Context, req *ActionRequest) (any, error) {
					mu.Lock()
					defer mu.Unlock()
					starts = append(starts, req.Started)
					return 1, nil
				})}, &HandlerOptions{Origin: testOrigin, AddressPacing: tc.mode,
					Limiter: &SessionLimiter{Interval: interval},
					Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
						if tc.anonymous {
							return WithAnonymousSessionKey(r.Context(), r.Header.Get("X-Session")), nil
						}
						return WithSessionKey(r.Context(), r.Header.Get("X-Session")), nil
					},
				})
				require.NoError(t, err)
				var ops []string
				for i := range 8 {
					ops = append(ops, fmt.Sprintf(`{"id":"o%d","action":"a"}`, i))
				}
				body := `{"version":"0.1","operations":[` + strings.Join(ops, ",") + `]}`
				var wg sync.WaitGroup
				codes := make(chan int, 8)
				for i := range 8 {
					wg.Go(func() {
						codes <- post(h, body, map[string]string{"X-Session": fmt.Sprintf("fresh-%d", i)}).Code
					})
				}
				wg.Wait()
				close(codes)
				for c := range codes {
					assert.Equal(t, 200, c)
				}
				require.Len(t, starts, 64)
				slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
				closest := starts[len(starts)-1].Sub(starts[0])
				for i := 1; i < len(starts); i++ {
					closest = min(closest, starts[i].Sub(starts[i-1]))
				}
				if tc.paced {
					assert.GreaterOrEqual(t, closest, interval, "one address: starts at least the interval apart")
					assert.GreaterOrEqual(t, starts[63].Sub(starts[0]), 63*interval)
				} else {
					assert.Less(t, closest, interval, "separate sessions are paced separately")
				}
			})
		})
	}
}

// TestHandlerIdempotencyShareByAddress: the stored responses of anonymous
// sessions are charged to their client address, so fresh cookies do not
// multiply a client's share of the store; signed-in sessions have their own.
func TestHandlerIdempotencyShareByAddress(t *testing.T) {
	m := manifestWith(t, "", `{"a":{"effect":"write"}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: NewMemoryIdempotencyStore(&MemoryIdempotencyStoreOptions{MaxEntries: 100, MaxClientEntries: 2}),
		Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
			if r.Header.Get("X-Signed-In") != "" {
				return WithSessionKey(r.Context(), r.Header.Get("X-Session")), nil
			}
			return WithAnonymousSessionKey(r.Context(), r.Header.Get("X-Session")), nil
		},
	})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
	for i, want := range []int{200, 200, 503} {
		rec := post(h, body, map[string]string{"Idempotency-Key": "k", "X-Session": fmt.Sprintf("anon-%d", i)})
		assert.Equal(t, want, rec.Code, "anonymous session %d", i)
	}
	for i := range 2 {
		rec := post(h, body, map[string]string{"Idempotency-Key": "k", "X-Session": fmt.Sprintf("user-%d", i), "X-Signed-In": "1"})
		assert.Equal(t, 200, rec.Code, "signed-in session %d", i)
	}
}

// TestHandlerRetryAfterFromLimiter: a Limiter refusal that says when to
// retry (its backend is down) reaches the client as Retry-After.
func TestHandlerRetryAfterFromLimiter(t *testing.T) {
	m := manifestWith(t, "", `{"a":{}}`)
	h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, Limiter: limiterFunc(func(context.Context, string) error {
		return &Error{Status: 503, Code: CodeUnavailable, Message: "Pacing is unavailable.", RetryAfter: 1500 * time.Millisecond}
	}),
	})
	require.NoError(t, err)
	rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`, nil)
	assert.Equal(t, 503, rec.Code)
	assert.Equal(t, CodeUnavailable, decodeEnvelope(t, rec).Code)
	assert.Equal(t, "2", rec.Header().Get("Retry-After"))
}

// completeFailingStore is a memory store whose Complete fails once, as a
// store whose backend is down at the end of a batch does, and which counts
// Release calls.
type completeFailingStore struct {
	*MemoryIdempotencyStore
	failed   atomic.Bool
	releases atomic.Int32
}

func (s *completeFailingStore) Complete(ctx context.Context, r IdempotencyReservation, rec IdempotencyRecord) error {
	if s.failed.CompareAndSwap(false, true) {
		return errors.New("store down")
	}
	return s.MemoryIdempotencyStore.Complete(ctx, r, rec)
}

func (s *completeFailingStore) Release(ctx context.Context, r IdempotencyReservation) error {
	s.releases.Add(1)
	return s.MemoryIdempotencyStore.Release(ctx, r)
}

// TestHandlerIdempotencyCompleteFailureNeverReruns: a batch that ran but
// whose response could not be stored keeps its key in progress. Releasing
// it would let a retry run the irreversible action a second time.
func TestHandlerIdempotencyCompleteFailureNeverReruns(t *testing.T) {
	m := manifestWith(t, "", `{"order.place":{"effect":"irreversible"}}`)
	var placed atomic.Int32
	store := &completeFailingStore{MemoryIdempotencyStore: NewMemoryIdempotencyStore(nil)}
	h, err := NewHandler(m, map[string]ActionHandler{"order.place": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
		return placed.Add(1), nil
	})}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: store})
	require.NoError(t, err)
	body := `{"version":"0.1","operations":[{"id":"x","action":"order.place"}]}`
	key := map[string]string{"Idempotency-Key": "order-1"}
	assert.Equal(t, 200, post(h, body, key).Code, "the batch ran; its client gets the response")
	retry := post(h, body, key)
	assert.Equal(t, 409, retry.Code)
	assert.Equal(t, CodeIdempotencyInProgress, decodeEnvelope(t, retry).Code)
	assert.EqualValues(t, 1, placed.Load(), "never run twice")
	assert.Zero(t, store.releases.Load(), "a reservation whose batch ran is never released")
}
