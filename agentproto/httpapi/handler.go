package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/internal/loopback"
	"github.com/agentbridge/agentbridge/agentproto/internal/serverhook"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// HTTP API defaults.
const (
	// DefaultMaxBodySize is the largest POST body the HTTP API reads:
	// Chrome's 1 MiB limit on what reaches the extension.
	DefaultMaxBodySize = 1 << 20
	// DefaultHeartbeat is the interval of an event stream's heartbeats.
	DefaultHeartbeat = 15 * time.Second
	// DefaultStreamBuffer is the number of events (of the stream's task)
	// an event stream holds for a slow reader before it is ended.
	DefaultStreamBuffer = 256
)

// MsgBodyNotJSON is the HTTP API's answer (400) to a POST body that is
// not JSON: the reference's words.
const MsgBodyNotJSON = "Request body must be JSON"

// HandlerOptions configures the HTTP compatibility API. Nil means defaults.
type HandlerOptions struct {
	// AllowedOrigins lists the browser origins allowed to call the API,
	// "chrome-extension://<id>" (a trailing slash is ignored). Requests
	// with any other Origin header are refused (403); requests without
	// one (curl, programs) are not affected. Empty entries ("" or "/", as
	// from a host started without its origin argument) allow nothing: an
	// empty, repeated or "/" Origin header is always refused.
	AllowedOrigins []string
	// MaxBodySize is the largest POST body read. Zero means
	// [DefaultMaxBodySize].
	MaxBodySize int64
	// Heartbeat is the interval of event-stream heartbeats. Zero means
	// [DefaultHeartbeat].
	Heartbeat time.Duration
	// StreamBuffer is the number of events an event stream holds for a
	// slow reader; when it overflows the stream ends (the client can
	// reconnect and starts again from a fresh task.snapshot). The
	// stream's bytes are bounded too, as a socket client's are: by the
	// server's MaxQueuedBytes for the stream, and MaxTotalQueuedBytes for
	// all clients together. Zero means [DefaultStreamBuffer].
	StreamBuffer int
	// Logger receives diagnostics. Nil means the server's.
	Logger *slog.Logger
}

// NewHandler returns the HTTP compatibility API of the reference host,
// served by srv: the same token, extension and events.
//
// Routes: GET /health; GET /v1/browser/snapshot and /screenshot; POST
// /v1/browser/navigate, click, type, press, scroll and extract (the body
// is the payload); GET /v1/tasks (list) and POST /v1/tasks or /v1/goal
// (start); GET /v1/tasks/{id} and /v1/tasks/{id}/trace (both tasks.get);
// POST /v1/tasks/{id}/stop, pause, resume, confirm and wait; GET
// /v1/tasks/{id}/events (Server-Sent Events: task.snapshot as
// {"taskId","task"}, task.error, the task's events, heartbeats as
// {"at":ms}); GET /v1/tools (the [tools.List] catalogue as function tools) and
// POST /v1/tools/call ({"tool","arguments","timeoutMs"}, run with
// [tools.Call]). As in the reference, trailing slashes are ignored and task
// ids are percent-decoded ("a%2Fb" is the task "a/b"). Results are the
// bodies of 200 responses; errors are {"error": msg} with 400 (bad JSON,
// an unknown tool, tool arguments that fail their schema, with "path"),
// 401, 403, 404 ("Unknown endpoint: M /path"), 405, 413, 415, or 500 for
// errors from the bridge or the extension.
//
// Unlike the reference it is secure by default: the token is required
// (Authorization: Bearer <t> or X-WebOperator-Token: <t>; ?token= is
// refused) on everything but /health; only loopback Host headers are
// accepted, against DNS rebinding; browser Origins other than the allowed
// extensions are refused (an empty one always); OPTIONS preflights are
// refused; and a non-empty POST body must be application/json, so a web
// page cannot send one without a CORS preflight (CSRF). An empty body is
// accepted with any Content-Type: it carries nothing to forge.
func NewHandler(srv *bridge.Server, opts *HandlerOptions) http.Handler {
	s := serverhook.Of(srv)
	h := &httpAPI{srv: s}
	if opts != nil {
		h.opts = *opts
	}
	h.opts.MaxBodySize = wire.OrDefault(h.opts.MaxBodySize, DefaultMaxBodySize)
	h.opts.Heartbeat = wire.OrDefault(h.opts.Heartbeat, DefaultHeartbeat)
	h.opts.StreamBuffer = wire.OrDefault(h.opts.StreamBuffer, DefaultStreamBuffer)
	if h.opts.Logger == nil {
		h.opts.Logger = s.Logger()
	}
	for _, o := range h.opts.AllowedOrigins {
		if o = strings.TrimSuffix(o, "/"); o != "" {
			h.origins = append(h.origins, o)
		}
	}
	return h
}

type httpAPI struct {
	srv     serverhook.Server
	opts    HandlerOptions
	origins []string
}

// httpError is a refusal with its status.
type httpError struct {
	status int
	msg    string
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(wire.AppendString([]byte(`{"error":`), msg), '}', '\n'))
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func (h *httpAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Until the request is authorized, every answer (the refusals, and
	// /health) is written without reading the body. net/http would then
	// wait, with no deadline, for the rest of an announced body, before
	// replying and again after, so that a local process without a token
	// could hold connections, and with them the host's file descriptors and
	// its agent socket, for good. Such an answer closes the connection and
	// ends the body's reading at once.
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	if h.serve(w, r) || r.ContentLength == 0 {
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// serve answers r and reports whether it was authorized and routed.
func (h *httpAPI) serve(w http.ResponseWriter, r *http.Request) bool {
	if !loopback.Host(r.Host) {
		writeJSONError(w, http.StatusForbidden, "Host not allowed: the API answers only to loopback host names")
		return false
	}
	if origin, ok := r.Header["Origin"]; ok && !h.originAllowed(origin) {
		writeJSONError(w, http.StatusForbidden, "Origin not allowed")
		return false
	}
	path := routePath(r)
	if path == "/health" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.methodNotAllowed(w, r, path, "GET")
			return false
		}
		var buf [128]byte
		writeJSON(w, h.srv.AppendHealth(buf[:0]))
		return false
	}
	if e := h.authorize(r); e != nil {
		writeJSONError(w, e.status, e.msg)
		return false
	}
	w.Header().Del("Connection")
	Authenticated(r)
	h.route(w, r, path)
	return true
}

// routePath is the path requests are routed by, as the reference's: the
// path as sent (still percent-encoded, so that an encoded "/" inside a
// task id does not split it) without trailing slashes.
func routePath(r *http.Request) string {
	path := strings.TrimRight(r.URL.EscapedPath(), "/")
	if path == "" {
		return "/"
	}
	return path
}

// originAllowed reports whether the Origin header (all its values) names
// an allowed origin. An empty origin ("", "/") is never allowed, whatever
// the list holds: a host started without its origin argument must not
// allow one by accident.
func (h *httpAPI) originAllowed(values []string) bool {
	if len(values) != 1 {
		return false
	}
	origin := strings.TrimSuffix(values[0], "/")
	if origin == "" {
		return false
	}
	return slices.Contains(h.origins, origin)
}

func (h *httpAPI) authorize(r *http.Request) *httpError {
	if r.URL.Query().Has("token") {
		return &httpError{http.StatusUnauthorized, "Tokens in the query string are not accepted: use Authorization: Bearer or X-WebOperator-Token"}
	}
	s := h.srv
	hasToken, allowAnon := s.Auth()
	if !hasToken {
		if allowAnon {
			return nil
		}
		return &httpError{http.StatusUnauthorized, agentproto.MsgTokenNotConfigured}
	}
	token, ok := "", false
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, t, found := strings.Cut(a, " ")
		if found && strings.EqualFold(scheme, "Bearer") {
			token, ok = strings.TrimSpace(t), true
		}
	} else if t := r.Header.Get("X-WebOperator-Token"); t != "" {
		token, ok = t, true
	}
	if !ok {
		return &httpError{http.StatusUnauthorized, agentproto.MsgUnauthorized}
	}
	if !s.TokenMatches([]byte(token)) {
		return &httpError{http.StatusUnauthorized, agentproto.MsgUnauthorized}
	}
	return nil
}

func (h *httpAPI) notFound(w http.ResponseWriter, r *http.Request, path string) {
	writeJSONError(w, http.StatusNotFound, "Unknown endpoint: "+r.Method+" "+path)
}

func (h *httpAPI) methodNotAllowed(w http.ResponseWriter, r *http.Request, path, allow string) {
	w.Header().Set("Allow", allow)
	writeJSONError(w, http.StatusMethodNotAllowed, "Method not allowed: "+r.Method+" "+path)
}

var browserPosts = map[string]string{
	"navigate": agentproto.TypeNavigate, "click": agentproto.TypeClick, "type": agentproto.TypeText,
	"press": agentproto.TypePress, "scroll": agentproto.TypeScroll, "extract": agentproto.TypeExtract,
}

var taskPosts = map[string]string{
	"stop": agentproto.TypeTasksStop, "pause": agentproto.TypeTasksPause, "resume": agentproto.TypeTasksResume,
	"confirm": agentproto.TypeTasksConfirm, "wait": agentproto.TypeTasksWait,
}

func (h *httpAPI) route(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case path == "/v1/browser/snapshot" || path == "/v1/browser/screenshot":
		if r.Method != http.MethodGet {
			h.methodNotAllowed(w, r, path, "GET")
			return
		}
		payload, err := queryPayload(r)
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
		typ := agentproto.TypeSnapshot
		if strings.HasSuffix(path, "screenshot") {
			typ = agentproto.TypeScreenshot
		}
		h.forward(w, r, typ, payload, 0)
	case strings.HasPrefix(path, "/v1/browser/"):
		typ, ok := browserPosts[strings.TrimPrefix(path, "/v1/browser/")]
		if !ok {
			h.notFound(w, r, path)
			return
		}
		body, ok := h.postBody(w, r, path)
		if !ok {
			return
		}
		h.forward(w, r, typ, body, 0)
	case path == "/v1/tasks":
		switch r.Method {
		case http.MethodGet:
			h.forward(w, r, agentproto.TypeTasksList, wire.EmptyObject, 0)
		case http.MethodPost:
			body, ok := h.readBody(w, r)
			if ok {
				h.forward(w, r, agentproto.TypeTasksStart, body, 0)
			}
		default:
			h.methodNotAllowed(w, r, path, "GET, POST")
		}
	case path == "/v1/goal":
		// The newest reference's alias of POST /v1/tasks.
		body, ok := h.postBody(w, r, path)
		if ok {
			h.forward(w, r, agentproto.TypeTasksStart, body, 0)
		}
	case path == "/v1/tools":
		if r.Method != http.MethodGet {
			h.methodNotAllowed(w, r, path, "GET")
			return
		}
		writeJSON(w, toolsListing())
	case path == "/v1/tools/call":
		body, ok := h.postBody(w, r, path)
		if ok {
			h.callTool(w, r, body)
		}
	case strings.HasPrefix(path, "/v1/tasks/"):
		h.routeTask(w, r, path)
	default:
		h.notFound(w, r, path)
	}
}

// routeTask serves /v1/tasks/{id} and /v1/tasks/{id}/{action}. The id is
// percent-decoded, as the reference's decodeURIComponent does: "a%2Fb" is
// the task "a/b".
func (h *httpAPI) routeTask(w http.ResponseWriter, r *http.Request, path string) {
	rawID, action, _ := strings.Cut(strings.TrimPrefix(path, "/v1/tasks/"), "/")
	if rawID == "" || strings.Contains(action, "/") {
		h.notFound(w, r, path)
		return
	}
	id, err := url.PathUnescape(rawID)
	if err != nil || !utf8.ValidString(id) {
		writeJSONError(w, http.StatusBadRequest, "Task id is not a valid percent-encoded UTF-8 string")
		return
	}
	idPayload := append(wire.AppendString([]byte(`{"id":`), id), '}')
	switch action {
	case "", "trace":
		if r.Method != http.MethodGet {
			h.methodNotAllowed(w, r, path, "GET")
			return
		}
		h.forward(w, r, agentproto.TypeTasksGet, idPayload, 0)
	case "events":
		if r.Method != http.MethodGet {
			h.methodNotAllowed(w, r, path, "GET")
			return
		}
		h.stream(w, r, id, idPayload)
	default:
		typ, ok := taskPosts[action]
		if !ok {
			h.notFound(w, r, path)
			return
		}
		body, ok := h.postBody(w, r, path)
		if !ok {
			return
		}
		payload, wait := withID(body, id)
		timeout := time.Duration(0)
		if typ == agentproto.TypeTasksWait {
			// The reference's HTTP layer waits 5 s longer than the task
			// wait itself, so that the wait's own answer arrives first.
			timeout = wait + wire.WaitMargin
		}
		h.forward(w, r, typ, payload, timeout)
	}
}

// withID returns the body object with "id" set to id (replacing any id
// member the body had), and the wait its timeoutMs asks for (the
// extension's default when absent).
func withID(body []byte, id string) ([]byte, time.Duration) {
	out := wire.AppendString([]byte(`{"id":`), id)
	wait := agentproto.DefaultWaitTimeout
	var it wire.Members
	it.Reset(body)
	for it.Next() {
		m := it.Member()
		key := wire.UnescapeKey(m)
		if string(key) == "id" {
			continue
		}
		if string(key) == "timeoutMs" {
			if d := wire.ParseTimeout(m.Value); d > 0 {
				wait = d
			}
		}
		out = append(out, ',', '"')
		out = append(out, m.Key...)
		out = append(out, '"', ':')
		out = append(out, m.Value...)
	}
	return append(out, '}'), wait
}

// queryPayload builds a GET request's payload from tabId and allElements.
func queryPayload(r *http.Request) ([]byte, error) {
	q := r.URL.Query()
	out := []byte{'{'}
	if v := q.Get("tabId"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, errors.New("tabId must be a number")
		}
		out = strconv.AppendInt(append(out, `"tabId":`...), int64(n), 10)
	}
	if v := q.Get("allElements"); v == "true" || v == "1" {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, `"allElements":true`...)
	}
	return append(out, '}'), nil
}

// postBody refuses any method but POST, then reads the body as readBody.
func (h *httpAPI) postBody(w http.ResponseWriter, r *http.Request, path string) ([]byte, bool) {
	if r.Method != http.MethodPost {
		h.methodNotAllowed(w, r, path, "POST")
		return nil, false
	}
	return h.readBody(w, r)
}

// readBody reads a POST body as a JSON object ({} when empty).
//
// An empty body is accepted whatever its Content-Type (or none): the
// reference's clients send control requests (stop, pause, resume, an
// optional wait or extract body) without one, and the token header already
// forces a CORS preflight, so an empty body adds no CSRF risk. A non-empty
// body must be application/json, which a web page cannot send without a
// preflight.
func (h *httpAPI) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > h.opts.MaxBodySize {
		writeJSONError(w, http.StatusRequestEntityTooLarge, "Request body exceeds "+strconv.FormatInt(h.opts.MaxBodySize, 10)+" bytes")
		return nil, false
	}
	var body []byte
	if r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		jsonType := err == nil && mt == "application/json"
		if !jsonType && r.ContentLength > 0 {
			writeJSONError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return nil, false
		}
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodySize))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeJSONError(w, http.StatusRequestEntityTooLarge, "Request body exceeds "+strconv.FormatInt(h.opts.MaxBodySize, 10)+" bytes")
			} else {
				writeJSONError(w, http.StatusBadRequest, "Cannot read the request body")
			}
			return nil, false
		}
		if len(body) > 0 && !jsonType {
			// A body of unknown length (chunked) that was not empty.
			writeJSONError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return nil, false
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return wire.EmptyObject, true
	}
	if wire.Valid(body) != nil {
		writeJSONError(w, http.StatusBadRequest, MsgBodyNotJSON)
		return nil, false
	}
	if body[wire.SkipSpace(body)] != '{' {
		writeJSONError(w, http.StatusBadRequest, "Request body must be a JSON object")
		return nil, false
	}
	return body, true
}

func (h *httpAPI) forward(w http.ResponseWriter, r *http.Request, typ string, payload []byte, timeout time.Duration) {
	result, err := h.srv.Call(r.Context(), typ, payload, timeout)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client is gone
		}
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if result == nil {
		result = wire.Null
	}
	writeJSON(w, result)
}

// stream serves a task's events as Server-Sent Events.
func (h *httpAPI) stream(w http.ResponseWriter, r *http.Request, id string, idPayload []byte) {
	sub := h.srv.Subscribe(id, h.opts.StreamBuffer)
	if sub == nil {
		writeJSONError(w, http.StatusServiceUnavailable, agentproto.MsgShuttingDown)
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(chunk []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := w.Write(chunk); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte(": connected\n\n")) {
		return
	}
	ctx := r.Context()
	if !h.srv.ExtensionOnline() {
		if !send(sseEvent(nil, "bridge.status", []byte(`{"bridge":"online","extension":"offline"}`))) {
			return
		}
	} else {
		// As the reference: the task wrapped with its id, or the error of
		// tasks.get as a task.error event.
		task, err := h.srv.Call(ctx, agentproto.TypeTasksGet, idPayload, 0)
		data := wire.AppendString([]byte(`{"taskId":`), id)
		var msg []byte
		if err != nil {
			data = wire.AppendString(append(data, `,"error":`...), err.Error())
			msg = sseEvent(nil, "task.error", append(data, '}'))
		} else {
			if task == nil {
				task = wire.Null
			}
			data = append(append(data, `,"task":`...), task...)
			msg = sseEvent(nil, "task.snapshot", append(data, '}'))
		}
		if ctx.Err() != nil || !send(msg) {
			return
		}
	}
	heartbeat := time.NewTicker(h.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Done():
			return // overflow or server closing: the client reconnects
		case <-sub.Ready():
			events := sub.Take()
			for i, raw := range events {
				ok := send(sseEvent(nil, strings.ReplaceAll(wire.EventKind(raw), ":", "."), raw))
				sub.Written(raw)
				if !ok {
					for _, rest := range events[i+1:] {
						sub.Written(rest)
					}
					return
				}
			}
		case now := <-heartbeat.C:
			at := strconv.AppendInt([]byte(`{"at":`), now.UnixMilli(), 10)
			if !send(sseEvent(nil, "heartbeat", append(at, '}'))) {
				return
			}
		}
	}
}

// sseEvent appends one event: its name and its data, one data line per
// line of the JSON text (relayed JSON may contain newlines between
// tokens).
func sseEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, '\n')
	for {
		line, rest, found := bytes.Cut(data, []byte("\n"))
		dst = append(dst, "data: "...)
		dst = append(dst, bytes.TrimSuffix(line, []byte("\r"))...)
		dst = append(dst, '\n')
		if !found {
			break
		}
		data = rest
	}
	return append(dst, '\n')
}

// toolsListing is GET /v1/tools's body: the catalogue in the shape of the
// reference's (OpenAI function tools).
var toolsListing = sync.OnceValue(func() []byte {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	var listing struct {
		Tools []tool `json:"tools"`
	}
	for _, t := range tools.List() {
		listing.Tools = append(listing.Tools, tool{Type: "function", Function: function{t.Name, t.Description, t.InputSchema}})
	}
	b, err := json.Marshal(listing)
	if err != nil {
		panic("httpapi: tool listing: " + err.Error())
	}
	return b
})

// callTool serves POST /v1/tools/call: {"tool" (or "name"), "arguments"
// (or "parameters" or "payload"), "timeoutMs"}, answered with the tool's
// result.
func (h *httpAPI) callTool(w http.ResponseWriter, r *http.Request, body []byte) {
	var name string
	args := make([]json.RawMessage, 3) // arguments, parameters, payload, in that order
	var timeout time.Duration
	err := strictjson.Fields(body, func(key, value []byte) error {
		switch string(key) {
		case "tool", "name":
			var s string
			if json.Unmarshal(value, &s) != nil {
				return errors.New(string(key) + " must be a string")
			}
			if name == "" || string(key) == "tool" {
				name = s
			}
		case "arguments":
			args[0] = value
		case "parameters":
			args[1] = value
		case "payload":
			args[2] = value
		case "timeoutMs":
			var ms float64
			if json.Unmarshal(value, &ms) != nil {
				return errors.New("timeoutMs must be a number")
			}
			if ms > 0 {
				timeout = wire.ClampMillis(ms, tools.DefaultMaxGoalTimeout)
			}
		}
		return nil
	})
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, "Invalid tool call: "+err.Error())
		return
	}
	var toolArgs json.RawMessage
	for _, a := range args {
		if a != nil && string(a) != "null" {
			toolArgs = a
			break
		}
	}
	ctx := r.Context()
	if timeout > 0 && name != tools.ExecuteGoal {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res, err := tools.Call(ctx, h.srv.Caller(), name, toolArgs, nil)
	var argErr *tools.ArgumentsError
	switch {
	case err == nil:
		writeJSON(w, res.Result)
	case errors.Is(err, tools.ErrUnknown):
		writeJSONError(w, http.StatusBadRequest, "Unknown tool: "+name)
	case errors.As(err, &argErr):
		path := argErr.Path
		if path == "" {
			path = "/"
		}
		msg := wire.AppendString([]byte(`{"error":`), "Invalid arguments for "+argErr.Tool+" at "+path+": "+argErr.Message)
		msg = wire.AppendString(append(msg, `,"path":`...), argErr.Path)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(append(msg, '}', '\n'))
	case r.Context().Err() != nil:
		// the client is gone
	default:
		writeJSONError(w, http.StatusInternalServerError, err.Error())
	}
}
