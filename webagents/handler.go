package webagents

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ContextFunc loads the session of a request and returns the context action
// handlers receive. It may set cookies on w; it must not write a body. Use
// [WithSessionKey] to name the session, which scopes the [Limiter] and
// idempotency keys, and [WithCredential] to name the credential as
// presented, which then scopes idempotency keys instead: a site whose
// actions replace the credential (a sign-in that rotates the cookie) must,
// or the retry of a keyed batch that did so runs again. An *[Error] it
// returns is sent as is; any other error as 500 "internal".
type ContextFunc func(w http.ResponseWriter, r *http.Request) (context.Context, error)

// HandlerOptions configures [NewHandler]. Every zero value is a documented
// default; nil options mean all defaults.
type HandlerOptions struct {
	// Origin is the site's one public origin, such as "https://shop.example".
	// Forwarded Host headers are never trusted. Empty means: the address the
	// request arrived on, when that is a loopback address (for local
	// development); requests on other addresses are then refused.
	Origin string
	// Context loads the request's session; nil uses the request's context.
	Context ContextFunc
	// Limiter paces operation starts across a session's batches (requests
	// without a session are paced by client address); nil means no pacing
	// beyond each batch's own.
	Limiter Limiter
	// AddressPacing says which requests with a session the [Limiter] also
	// paces by client address; the zero value is [PaceAnonymousByAddress].
	AddressPacing AddressPacing
	// IdempotencyStore keeps responses to requests with an Idempotency-Key
	// header; nil means NewMemoryIdempotencyStore(nil): 10,000 keys and
	// 64 MiB of responses, a tenth of each per client.
	IdempotencyStore IdempotencyStore
	// IdempotencyWindow is how long a key is remembered; 0 means 24 h. A
	// running batch's reservation lives the window plus the Deadline, and
	// its response the window from when it is stored.
	IdempotencyWindow time.Duration
	// MaxBodyChars bounds a batch body in code points; 0 means 128,000.
	// Values below 128,000 are an error; the wire cap is 1 MiB.
	MaxBodyChars int
	// Deadline bounds each batch; 0 means 30 s. A batch that has started
	// runs to completion or to this deadline whatever its client does: a
	// client that disconnects does not cut it short (see [Handler.Shutdown]).
	Deadline time.Duration
	// MaxResultBytes bounds each batch's results; 0 means
	// [DefaultMaxResultBytes] (1 MB). Larger values are an error: the
	// response must fit the 1 MiB transport cap.
	MaxResultBytes int
	// Logger receives failures reported as "internal"; nil is silent.
	Logger *slog.Logger
}

// AddressPacing says when a [Handler] calls its [Limiter] with the
// client address ("addr:" and the host of the request's remote address) in
// addition to the session. Requests without a session are always paced by
// address: it is their only scope.
//
// The model: a session is one client, an address may be many (a NAT, a
// proxy). Anonymous sessions cost nothing to mint, so without address
// pacing a client that takes a fresh cookie per batch would escape
// cross-batch pacing. Behind a reverse proxy, every request has the
// proxy's address: pace anonymous traffic there, or choose
// [PaceSessionsOnly].
type AddressPacing int

const (
	// PaceAnonymousByAddress (the default) paces requests whose session
	// was set with [WithAnonymousSessionKey] by client address as well.
	PaceAnonymousByAddress AddressPacing = iota
	// PaceAllByAddress paces every request by client address as well.
	PaceAllByAddress
	// PaceSessionsOnly paces requests with a session by their session only.
	PaceSessionsOnly
)

// Handler is the server side of WebAgents: an http.Handler serving the two
// discovery documents and the workflow endpoint. Route [MarkdownPath],
// [WellKnownPath] and EndpointPath to it (Register does).
//
// A batch runs detached from its request's cancellation (it keeps the
// request context's values): once started, it runs to completion or to its
// deadline even if the client goes away, and with an Idempotency-Key its
// response is stored for the client's retry. [Handler.Shutdown] and
// [Handler.Close] end running batches.
//
// A Handler is safe for concurrent use. It starts no goroutine that
// outlives a request.
type Handler struct {
	origin       string // "" means the loopback address of each request
	plainReferer bool   // origin is what url.Parse and originOf make of it (see plainRefererPath)
	manifest     *Manifest
	endpointPath string
	markdown     []byte
	json         []byte
	context      ContextFunc
	executor     Executor
	paceAddress  AddressPacing
	store        IdempotencyStore
	window       time.Duration
	maxBodyChars int
	maxBodyBytes int
	logger       *slog.Logger
	deadline     time.Duration

	mu      sync.Mutex
	closing bool
	running int                     // batches being served
	idle    chan struct{}           // closed when closing and running reaches 0
	stop    context.Context         // canceled by Close, or Shutdown past its context
	cancel  context.CancelCauseFunc // cancels stop
}

// ErrHandlerClosed is the cause of the cancellation of batches that
// [Handler.Close] or [Handler.Shutdown] cut short.
var ErrHandlerClosed = errors.New("webagents: handler closed")

// NewHandler returns a [Handler] that serves the manifest m and runs its
// actions with the handlers in actions, one for every action m publishes
// and none for another: a missing or extra handler is an error, as is a nil
// m. The manifest is validated again (which also compiles its schemas), so
// one built in Go is checked; its endpoint must resolve to opts.Origin.
// opts may be nil: every option has a default.
func NewHandler(m *Manifest, actions map[string]ActionHandler, opts *HandlerOptions) (*Handler, error) {
	if m == nil {
		return nil, errors.New("webagents: NewHandler needs a manifest")
	}
	if opts == nil {
		opts = &HandlerOptions{}
	}
	h := &Handler{
		context:      opts.Context,
		store:        opts.IdempotencyStore,
		window:       opts.IdempotencyWindow,
		maxBodyChars: opts.MaxBodyChars,
		logger:       opts.Logger,
		deadline:     opts.Deadline,
		paceAddress:  opts.AddressPacing,
	}
	if h.deadline <= 0 {
		h.deadline = DefaultDeadline
	}
	h.stop, h.cancel = context.WithCancelCause(context.Background())
	h.idle = make(chan struct{})
	if opts.Origin != "" {
		o, err := ParseOrigin(opts.Origin)
		if err != nil {
			return nil, err
		}
		h.origin = o
		if u, err := url.Parse(o + "/"); err == nil && originOf(u) == o {
			h.plainReferer = true
		}
	}
	base := h.origin
	if base == "" {
		base = "http://127.0.0.1"
	}
	m, err := m.revalidate(base)
	if err != nil {
		return nil, fmt.Errorf("webagents: manifest: %w", err)
	}
	h.manifest = m
	endpoint, _ := url.Parse(base)
	ref, _ := url.Parse(m.Workflow.Endpoint)
	h.endpointPath = endpoint.ResolveReference(ref).EscapedPath()
	if h.origin == "" && !strings.HasPrefix(m.Workflow.Endpoint, "/") {
		return nil, errors.New("webagents: without an Origin the endpoint must be an absolute path")
	}
	for name := range m.Actions {
		if actions[name] == nil {
			return nil, fmt.Errorf("webagents: action %q has no handler", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(actions)) {
		if m.Actions[name] == nil {
			return nil, fmt.Errorf("webagents: handler for unpublished action %q", name)
		}
	}
	if h.maxBodyChars == 0 {
		h.maxBodyChars = DefaultMaxBodyChars
	}
	if h.maxBodyChars < DefaultMaxBodyChars {
		return nil, fmt.Errorf("webagents: MaxBodyChars %d is below the protocol's %d", h.maxBodyChars, DefaultMaxBodyChars)
	}
	h.maxBodyBytes = min(maxUTF8Bytes(h.maxBodyChars), TransportLimitBytes)
	if opts.MaxResultBytes > DefaultMaxResultBytes {
		return nil, fmt.Errorf("webagents: MaxResultBytes %d is above %d, which a response within the %d-byte transport cap can carry",
			opts.MaxResultBytes, DefaultMaxResultBytes, TransportLimitBytes)
	}
	if h.window <= 0 {
		h.window = DefaultIdempotencyWindow
	}
	if h.store == nil {
		h.store = NewMemoryIdempotencyStore(nil)
	}
	if h.markdown, err = m.MarkdownDocument(); err != nil {
		return nil, err
	}
	if h.json, err = m.JSONDocument(); err != nil {
		return nil, err
	}
	// The JSON document was parsed above; the markdown one adds prose
	// and a fence, which may take it past what clients read.
	if _, err := documentSize(h.markdown, true); err != nil {
		return nil, fmt.Errorf("webagents: the document served at %s: %w", MarkdownPath, err)
	}
	h.executor = Executor{
		Handlers:       maps.Clone(actions),
		Deadline:       opts.Deadline,
		MaxResultBytes: opts.MaxResultBytes,
		Limiter:        opts.Limiter,
		Logger:         opts.Logger,
	}
	return h, nil
}

// ParseOrigin checks that s is an http(s) origin (no path other than "/",
// no query, fragment or user info) and returns its serialization.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("webagents: %q is not an http(s) origin", truncate(s, 100))
	}
	return originOf(u), nil
}

// Manifest returns the validated manifest the handler serves.
func (h *Handler) Manifest() *Manifest { return h.manifest }

// EndpointPath returns the path of the workflow endpoint.
func (h *Handler) EndpointPath() string { return h.endpointPath }

// Shutdown stops accepting batches (new ones get 503 "unavailable") and
// waits until the running ones have finished or ctx ends. When ctx ends
// first, it cancels the running batches (their handlers' contexts end with
// [ErrHandlerClosed] as the cause, and each responds and stores its
// response as a batch past its deadline does) and returns ctx's error
// without waiting further. Call it before or alongside
// http.Server.Shutdown, which does not cancel requests.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.startClosing()
	select {
	case <-h.idle:
		return nil
	case <-ctx.Done():
		h.cancel(ErrHandlerClosed)
		return ctx.Err()
	}
}

// Close stops accepting batches and cancels the running ones at once. It
// is idempotent and safe to call from any goroutine.
func (h *Handler) Close() error {
	h.startClosing()
	h.cancel(ErrHandlerClosed)
	return nil
}

func (h *Handler) startClosing() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closing {
		h.closing = true
		if h.running == 0 {
			close(h.idle)
		}
	}
}

// begin counts a batch as running; it reports false once the [Handler] is
// shutting down.
func (h *Handler) begin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.running++
	return true
}

// end counts a batch begin let run as finished.
func (h *Handler) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running--
	if h.closing && h.running == 0 {
		close(h.idle)
	}
}

// batchContext returns the context a batch runs under: ctx's values, but
// not its cancellation (the client may go away), canceled by Close or a
// Shutdown past its context. The executor adds the batch deadline.
func (h *Handler) batchContext(ctx context.Context) (context.Context, func()) {
	bctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unregister := context.AfterFunc(h.stop, func() { cancel(context.Cause(h.stop)) })
	return bctx, func() {
		unregister()
		cancel(nil)
	}
}

// Register routes the discovery paths and the endpoint of mux to h.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle(MarkdownPath, h)
	mux.Handle(WellKnownPath, h)
	mux.Handle(h.endpointPath, h)
}

// ServeHTTP serves the discovery documents and the workflow endpoint, and
// 404 for any other path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.EscapedPath() {
	case MarkdownPath:
		h.serveDocument(w, r, "text/markdown; charset=utf-8", h.markdown)
	case WellKnownPath:
		h.serveDocument(w, r, "application/json", h.json)
	case h.endpointPath:
		h.serveEndpoint(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) serveDocument(w http.ResponseWriter, r *http.Request, contentType string, body []byte) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.writeError(w, errorf(CodeMethodNotAllowed, "Use GET or HEAD."))
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// requestOrigin returns the public origin for r, or "" when there is none.
func (h *Handler) requestOrigin(r *http.Request) string {
	if h.origin != "" {
		return h.origin
	}
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	ap, err := netipAddrPort(addr.String())
	if err != nil || !ap.Addr().IsLoopback() {
		return ""
	}
	return "http://" + ap.String()
}

var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (h *Handler) serveEndpoint(w http.ResponseWriter, r *http.Request) {
	// The body must arrive within the batch deadline. Until it has been
	// read, an answer (a refusal) closes the connection and stops reading
	// it: net/http would otherwise wait for the rest of an announced body,
	// with no deadline, before and after replying, and a client sending a
	// byte of it could hold a connection for good on a server without a
	// ReadTimeout. Errors are ignored: a ResponseWriter that cannot set
	// deadlines (a wrapping middleware's) only loses this guard.
	var rc *http.ResponseController
	if r.ContentLength != 0 {
		rc = http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(h.deadline))
		w.Header().Set("Connection", "close")
		defer func() {
			if w.Header().Get("Connection") == "close" {
				_ = rc.SetReadDeadline(time.Now())
			}
		}()
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.writeError(w, errorf(CodeMethodNotAllowed, "Use POST."))
		return
	}
	origin := h.requestOrigin(r)
	if origin == "" {
		h.writeError(w, errorf(CodeForbiddenOrigin, "This server has no public origin for this address."))
		return
	}
	if values := r.Header.Values("Origin"); len(values) > 1 || (len(values) == 1 && values[0] != origin) {
		h.writeError(w, errorf(CodeForbiddenOrigin, "Cross-origin requests are refused."))
		return
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		h.writeError(w, errorf(CodeForbiddenOrigin, "Cross-site requests are refused."))
		return
	}
	if !isJSONContentType(r.Header.Values("Content-Type")) {
		h.writeError(w, errorf(CodeUnsupportedMediaType, "Send the batch as application/json."))
		return
	}
	tooLarge := func() *Error {
		return errorf(CodePayloadTooLarge, fmt.Sprintf("The body is at most %d characters.", h.maxBodyChars))
	}
	if r.ContentLength > int64(h.maxBodyBytes) {
		h.writeError(w, tooLarge())
		return
	}
	body := bufferPool.Get().(*bytes.Buffer)
	body.Reset()
	defer func() {
		if body.Cap() <= 64<<10 {
			bufferPool.Put(body)
		}
	}()
	if _, err := body.ReadFrom(io.LimitReader(r.Body, int64(h.maxBodyBytes)+1)); err != nil {
		h.writeError(w, errorf(CodeInvalidRequest, "The body could not be read."))
		return
	}
	if body.Len() > h.maxBodyBytes || (body.Len() > h.maxBodyChars && utf8.RuneCount(body.Bytes()) > h.maxBodyChars) {
		h.writeError(w, tooLarge())
		return
	}
	if body.Len() == 0 {
		h.writeError(w, errorf(CodeInvalidRequest, "The body is empty."))
		return
	}
	if r.ContentLength != 0 {
		// Read whole: the connection may serve the next request.
		_ = rc.SetReadDeadline(time.Time{})
		w.Header().Del("Connection")
	}
	ctx := r.Context()
	if h.context != nil {
		c, err := h.context(w, r)
		if err != nil {
			h.writeError(w, h.pluggedError(ctx, "webagents: context hook failed", err))
			return
		}
		if c != nil {
			ctx = c
		}
	}
	scope, scopes := h.scopes(ctx, r)
	ctx = withScopes(ctx, scopes)
	key, hasKey, kerr := idempotencyKey(r.Header.Values("Idempotency-Key"))
	if kerr != nil {
		h.writeError(w, kerr)
		return
	}
	if !h.begin() {
		h.writeError(w, errorf(CodeUnavailable, "The server is shutting down; try again later."))
		return
	}
	defer h.end()
	ctx, done := h.batchContext(ctx)
	defer done()
	if !hasKey {
		status, resp, _ := h.runBatch(ctx, w, r, body.Bytes())
		h.write(w, status, resp)
		bufferPool.Put(resp)
		return
	}
	h.serveIdempotent(ctx, w, r, scope, scopes, key, body.Bytes())
}

// scopes returns the scope of a request's idempotency keys (the credential
// it presented, else its session, else its client address) and the keys its
// operations are paced by.
func (h *Handler) scopes(ctx context.Context, r *http.Request) (string, *pacingScopes) {
	address := clientAddress(r)
	p := &pacingScopes{session: address}
	if sess := sessionOf(ctx); sess.key != "" {
		p.session = "session:" + sess.key
		if h.paceAddress == PaceAllByAddress || (sess.anonymous && h.paceAddress == PaceAnonymousByAddress) {
			p.address = address
		}
	}
	if c, ok := credentialOf(ctx); ok {
		return credentialScope(c), p
	}
	return p.session, p
}

// clientAddress is the scope of a request without a session: "addr:" and
// the host of its remote address.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// credentialScope is the idempotency scope of a request that presented
// credential (see [WithCredential]).
func credentialScope(credential string) string { return "credential:" + credential }

// pluggedError maps an error of a user-supplied hook or store: an *[Error] is
// sent as is; anything else is logged under msg and sent as internal.
func (h *Handler) pluggedError(ctx context.Context, msg string, err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		c := *we
		c.Status, c.Operation = we.HTTPStatus(), ""
		return &c
	}
	if h.logger != nil {
		h.logger.ErrorContext(ctx, msg, slog.String("error", err.Error()))
	}
	return internalError()
}

// runBatch decodes, plans and runs a batch and renders the response; a
// failure that says when to retry (a [Limiter] whose backend is down) sets
// Retry-After on w.
// executed reports whether any operation was started.
func (h *Handler) runBatch(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte) (status int, resp *bytes.Buffer, executed bool) {
	resp = bufferPool.Get().(*bytes.Buffer)
	resp.Reset()
	pacing := effectivePacing(h.manifest.Workflow, nil)
	b, err := DecodeBatch(body)
	if err == nil {
		var p *Plan
		if p, err = NewPlan(h.manifest, h.pagePath(r), b); err == nil {
			out := h.executor.Run(ctx, p)
			appendEnvelope(resp, p.Pacing, out, nil)
			if resp.Len() > TransportLimitBytes {
				// Results are bounded, but handlers' error messages are not:
				// a response the client must refuse helps nobody.
				resp.Reset()
				we := errorf(CodeResultTooLarge, "The response is too large.")
				appendEnvelope(resp, p.Pacing, nil, we)
				return we.HTTPStatus(), resp, out.executed
			}
			if out.Err != nil {
				setRetryAfter(w, out.Err.RetryAfter)
				return out.Err.HTTPStatus(), resp, out.executed
			}
			return http.StatusOK, resp, out.executed
		}
	}
	we := err.(*Error)
	appendEnvelope(resp, pacing, nil, we)
	return we.HTTPStatus(), resp, false
}

// pagePath returns the path actions are scoped to: that of a same-origin
// Referer, else "" (no scoping: pathPrefixes is a relevance filter and a
// request without a page has nothing to filter by).
func (h *Handler) pagePath(r *http.Request) string {
	ref := r.Header.Get("Referer")
	if ref == "" {
		return ""
	}
	if path, ok := h.plainRefererPath(ref); ok {
		return path
	}
	u, err := url.Parse(ref)
	if err != nil || originOf(u) != h.requestOrigin(r) {
		return ""
	}
	return u.EscapedPath()
}

// plainRefererPath is pagePath without parsing for the common Referer:
// the handler's Origin and a path of unreserved characters and slashes,
// which url.Parse and EscapedPath leave as they are.
func (h *Handler) plainRefererPath(ref string) (string, bool) {
	path, ok := strings.CutPrefix(ref, h.origin)
	if !ok || !h.plainReferer || path == "" || path[0] != '/' {
		return "", false
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; !isASCIILetter(c) && (c < '0' || c > '9') && c != '/' && c != '-' && c != '.' && c != '_' && c != '~' {
			return "", false
		}
	}
	return path, true
}

func (h *Handler) writeError(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e.RetryAfter)
	buf := bufferPool.Get().(*bytes.Buffer)
	buf.Reset()
	appendEnvelope(buf, effectivePacing(h.manifest.Workflow, nil), nil, e)
	h.write(w, e.HTTPStatus(), buf)
	bufferPool.Put(buf)
}

func (h *Handler) write(w http.ResponseWriter, status int, body *bytes.Buffer) {
	// As four hdr.Set calls, with the values in one allocation; each
	// slice's capacity is its length, so an Add elsewhere copies.
	v := make([]string, 4)
	v[0], v[1], v[2], v[3] = "application/json", strconv.Itoa(body.Len()), "no-store", "nosniff"
	hdr := w.Header()
	hdr["Content-Type"] = v[0:1:1]
	hdr["Content-Length"] = v[1:2:2]
	hdr["Cache-Control"] = v[2:3:3]
	hdr["X-Content-Type-Options"] = v[3:4:4]
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// setRetryAfter sets the Retry-After header to d in whole seconds, rounded
// up, when d is positive.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
}

func isJSONContentType(values []string) bool {
	if len(values) != 1 {
		return false
	}
	if values[0] == "application/json" {
		return true // what ParseMediaType says, without its map
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil || mt != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// idempotencyKey parses the Idempotency-Key header: an sf-string
// ("quoted") or, leniently, a bare token of visible ASCII.
func idempotencyKey(values []string) (string, bool, *Error) {
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", false, errorf(CodeInvalidRequest, "Send one Idempotency-Key header.")
	}
	v := strings.TrimSpace(values[0])
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" || len(v) > MaxIdempotencyKeyLen {
		return "", false, errorf(CodeInvalidRequest, fmt.Sprintf("The Idempotency-Key must be 1 to %d characters.", MaxIdempotencyKeyLen))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e || v[i] == '"' || v[i] == '\\' {
			return "", false, errorf(CodeInvalidRequest, "The Idempotency-Key must be visible ASCII.")
		}
	}
	return v, true, nil
}

func (h *Handler) serveIdempotent(ctx context.Context, w http.ResponseWriter, r *http.Request, scope string, scopes *pacingScopes, key string, body []byte) {
	// The store's per-client share is charged to the session, or to the
	// address where the address paces the request: fresh anonymous sessions
	// (or presented credentials) do not multiply it.
	charged := scopes.session
	if scopes.address != "" {
		charged = scopes.address
	}
	client := sha256.Sum256([]byte(charged))
	fingerprint := sha256.Sum256(body)
	// The batch deadline counts from the reservation, so the time the store
	// takes comes out of it and the record's Deadline is when the batch
	// really ends. The reservation lives the window past that deadline: a
	// window shorter than the deadline must not let the record expire, and
	// a retry run the batch again, while the batch is still running.
	deadline := time.Now().Add(h.deadline)
	reservation := IdempotencyReservation{
		Key:         idempotencyStoreKey(scope, key),
		Client:      hex.EncodeToString(client[:16]),
		Fingerprint: fingerprint,
		TTL:         h.window + h.deadline,
		Deadline:    deadline,
		Token:       reservationToken(),
	}
	existing, err := h.store.Reserve(ctx, reservation)
	switch {
	case err != nil:
		h.writeError(w, h.pluggedError(ctx, "webagents: idempotency store failed", err))
		return
	case existing != nil && existing.Fingerprint != fingerprint:
		h.writeError(w, errorf(CodeIdempotencyKeyReused, "This Idempotency-Key was used with a different request."))
		return
	case existing != nil && !existing.Completed:
		e := errorf(CodeIdempotencyInProgress, "The request with this Idempotency-Key is still running.")
		e.RetryAfter = max(time.Until(existing.Deadline), time.Second)
		if late := -time.Until(existing.Deadline); late > 0 {
			// Past its deadline the batch has ended; its response is being
			// stored (a store retrying), or never will be and the key stays
			// in progress for its window. Back off with the staleness, up
			// to a batch deadline, rather than have the client poll every
			// second for the whole window.
			e.RetryAfter = min(max(late, time.Second), h.deadline)
		}
		h.writeError(w, e)
		return
	case existing != nil && (existing.Status < 100 || existing.Status > 599):
		// A store's record net/http cannot send (WriteHeader panics on a
		// status outside 100..999, and the client would get no answer).
		h.writeError(w, h.pluggedError(ctx, "webagents: idempotency store failed",
			fmt.Errorf("stored response has status %d", existing.Status)))
		return
	case existing != nil:
		w.Header().Set("Idempotent-Replayed", "true")
		h.write(w, existing.Status, bytes.NewBuffer(existing.Body))
		return
	}
	executed := false
	defer func() {
		if !executed {
			// Nothing ran (refused, or a panic before any operation
			// started): let a retry run. Once an operation has started the
			// reservation is never released: if its response cannot be
			// stored, the key stays in progress for its window rather than
			// let a retry run the batch again.
			_ = h.store.Release(context.WithoutCancel(ctx), reservation)
		}
	}()
	rctx, replaced := withReplacement(ctx)
	bctx, cancel := context.WithDeadline(rctx, deadline)
	defer cancel()
	status, resp, executed := h.runBatch(bctx, w, r, body)
	if !executed {
		// Refused before any operation started (invalid, rate limited, the
		// deadline or a shutdown first): storing the refusal would
		// replay it to every retry for the whole window although nothing
		// was executed under the key.
		h.write(w, status, resp)
		bufferPool.Put(resp)
		return
	}
	rec := IdempotencyRecord{Fingerprint: fingerprint, Completed: true, Status: status, Body: bytes.Clone(resp.Bytes())}
	// The response is stored before it is sent, so that a retry sent as
	// soon as it arrives is a replay. But a store that is slow or retrying
	// (Redis failing) must not hold the answer past the deadline: then the
	// response goes out at the deadline, and Complete goes on in this
	// goroutine (the Handler still counts the request as running).
	answered := make(chan struct{})
	answer := time.AfterFunc(time.Until(deadline), func() {
		defer close(answered)
		h.write(w, status, resp)
		_ = http.NewResponseController(w).Flush()
	})
	complete := reservation
	complete.TTL = h.window
	if err := h.store.Complete(context.WithoutCancel(ctx), complete, rec); err != nil && h.logger != nil {
		h.logger.ErrorContext(ctx, "webagents: idempotency store failed; the key stays in progress for its window",
			slog.String("error", err.Error()))
	}
	if next, ok := replaced.replacement(); ok {
		// The batch handed its client another credential: a retry with it
		// must find the response too (see CredentialReplaced).
		nextScope := clientAddress(r)
		if next != "" {
			nextScope = credentialScope(next)
		}
		h.storeUnder(context.WithoutCancel(ctx), reservation, idempotencyStoreKey(nextScope, key), rec)
	}
	if answer.Stop() {
		h.write(w, status, resp)
	} else {
		<-answered
	}
	bufferPool.Put(resp)
}

// idempotencyStoreKey is the store's key for key in scope: hashed, so that
// session tokens and presented credentials never reach the store.
func idempotencyStoreKey(scope, key string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return hex.EncodeToString(sum[:])
}

func reservationToken() string {
	var token [16]byte
	_, _ = rand.Read(token[:])
	return hex.EncodeToString(token[:])
}

// storeUnder stores rec, the response to the batch that holds base, under
// storeKey as well, unless that key already holds a record (it is then
// another request's, and is left alone).
func (h *Handler) storeUnder(ctx context.Context, base IdempotencyReservation, storeKey string, rec IdempotencyRecord) {
	if storeKey == base.Key {
		return
	}
	r := base
	r.Key, r.Token = storeKey, reservationToken()
	existing, err := h.store.Reserve(ctx, r)
	if err == nil && existing == nil {
		r.TTL = h.window
		err = h.store.Complete(ctx, r, rec)
	}
	if err != nil && h.logger != nil {
		h.logger.ErrorContext(ctx, "webagents: idempotency store failed; a retry with the new credential may not replay",
			slog.String("error", err.Error()))
	}
}
