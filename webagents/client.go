package webagents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Default budgets of a [Client]. A site is hostile input: one that trickles
// a byte a second must not hold an agent forever, and discovery that fails
// must fall back to normal browsing, not hang.
const (
	// DefaultDiscoverTimeout bounds Discover (both documents) when the
	// caller's context has no deadline.
	DefaultDiscoverTimeout = 10 * time.Second
	// DefaultCheckTimeout bounds Check (four requests) when the caller's
	// context has no deadline.
	DefaultCheckTimeout = 20 * time.Second
	// DefaultRunTimeout bounds Run (discovery and the batch, whose server
	// deadline is 30 s by default) when the caller's context has no
	// deadline.
	DefaultRunTimeout = 45 * time.Second
	// MaxResponseHeaderBytes bounds the response headers the Client's own
	// transport reads (used when Client.HTTPClient is nil).
	MaxResponseHeaderBytes = 64 << 10
)

// Response bodies are capped on every fetch: a discovery document at
// 4 × MaxDocumentChars bytes (and MaxDocumentChars code points), a batch
// response at TransportLimitBytes, the body of a failed or non-JSON batch
// response kept in a RunResult at maxRawBody bytes. HEAD bodies are never
// read.
const maxRawBody = 64 << 10

// defaultTransport is the transport of a Client without an HTTPClient: the
// standard one with a cap on response headers.
var defaultTransport = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	return t
})

// Client is the agent side of WebAgents: discovery, the checker and batch
// runs. The zero value is ready to use. A Client is safe for concurrent use.
type Client struct {
	// HTTPClient sends the requests; nil means a client with the standard
	// transport whose response headers are capped at
	// MaxResponseHeaderBytes. Its CheckRedirect is replaced: discovery
	// follows at most 5 same-origin redirects and the workflow endpoint is
	// never followed. Its Timeout, if any, applies to each request.
	HTTPClient *http.Client
	// DiscoverTimeout bounds Discover when ctx has no deadline; 0 means
	// DefaultDiscoverTimeout, a negative value no bound.
	DiscoverTimeout time.Duration
	// CheckTimeout bounds Check when ctx has no deadline; 0 means
	// DefaultCheckTimeout, a negative value no bound.
	CheckTimeout time.Duration
	// RunTimeout bounds Run (its discovery included) when ctx has no
	// deadline; 0 means DefaultRunTimeout, a negative value no bound.
	RunTimeout time.Duration
	// UserAgent is sent with every request; "" means
	// "agentbridge-webagents/0.1".
	UserAgent string
	// Logger receives discovery and run diagnostics; nil is silent.
	Logger *slog.Logger
}

// DiscoveryStatus says whether a page publishes a usable manifest.
type DiscoveryStatus int

// Discovery statuses. Anything but DiscoveryFound means "fall back to normal
// browsing"; none of them is an error for the caller.
const (
	DiscoveryFound       DiscoveryStatus = iota // a valid, same-origin manifest
	DiscoveryAbsent                             // 404/410 at both paths, or no manifest in the documents
	DiscoveryInvalid                            // a document or manifest that breaks the rules
	DiscoveryUnsafe                             // a cross-origin redirect or endpoint
	DiscoveryUnavailable                        // a transport failure or an unexpected status
)

var discoveryStatusNames = [...]string{"found", "absent", "invalid", "unsafe", "unavailable"}

// String returns "found", "absent", "invalid", "unsafe" or "unavailable".
func (s DiscoveryStatus) String() string {
	if int(s) < len(discoveryStatusNames) {
		return discoveryStatusNames[s]
	}
	return fmt.Sprintf("DiscoveryStatus(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s DiscoveryStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Discovery is the outcome of Client.Discover.
type Discovery struct {
	Status DiscoveryStatus
	// PageURL is the page discovery was for.
	PageURL string
	// DocumentURL is the document the manifest came from (when found) or
	// the one that failed.
	DocumentURL string
	// Manifest is the validated manifest, when found.
	Manifest *Manifest
	// Endpoint is the absolute endpoint URL, when found.
	Endpoint string
	// Actions are the actions in scope for the page's path, when found.
	Actions []*Action
	// Warnings are the manifest's warnings (such as extra fenced blocks).
	Warnings []Problem
	// Err says why the status is not DiscoveryFound: ErrNoManifest,
	// ErrDocumentTooLarge, a *ValidationError, ErrUnsafeRedirect,
	// ErrTooManyRedirects, ErrCrossOriginEndpoint, or a transport error.
	Err error
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return &http.Client{Transport: defaultTransport()}
}

// withDefaultTimeout bounds ctx by the configured or default timeout when
// it has no deadline of its own.
func withDefaultTimeout(ctx context.Context, configured, def time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || configured < 0 {
		return ctx, func() {}
	}
	if configured == 0 {
		configured = def
	}
	return context.WithTimeoutCause(ctx, configured, &clientTimeoutError{configured})
}

// clientTimeoutError is the cause of a Client's own timeout.
type clientTimeoutError struct{ after time.Duration }

func (e *clientTimeoutError) Error() string {
	return "webagents: the site did not answer within " + e.after.String()
}

// Unwrap returns context.DeadlineExceeded.
func (e *clientTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ended returns the error of a fetch whose context has ended: the Client's
// own timeout when that is the cause, otherwise err.
func ended(ctx context.Context, err error) error {
	var te *clientTimeoutError
	if cause := context.Cause(ctx); errors.As(cause, &te) {
		return te
	}
	return err
}

// sameOriginClient returns a copy of the HTTP client that follows at most
// MaxRedirects redirects within origin.
func (c *Client) sameOriginClient(origin string) *http.Client {
	hc := *c.httpClient()
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return ErrTooManyRedirects
		}
		if originOf(req.URL) != origin {
			return ErrUnsafeRedirect
		}
		return nil
	}
	return &hc
}

func (c *Client) userAgent() string {
	if c.UserAgent != "" {
		return c.UserAgent
	}
	return "agentbridge-webagents/" + Version
}

// fetched is one GET or HEAD response with a bounded body.
type fetched struct {
	Status      int
	ContentType string
	Header      http.Header
	Body        []byte
	TooLarge    bool
	Redirected  bool
	FinalURL    string
}

func (c *Client) fetch(ctx context.Context, hc *http.Client, method, target string, limit int) (*fetched, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.userAgent())
	req.Header.Set("Accept", "text/markdown, application/json;q=0.9, */*;q=0.1")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	f := &fetched{
		Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Header: resp.Header,
		FinalURL: resp.Request.URL.String(), Redirected: resp.Request.URL.String() != target,
	}
	if method == http.MethodHead {
		return f, nil
	}
	f.Body, err = io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(f.Body) > limit {
		f.Body, f.TooLarge = nil, true
	}
	return f, nil
}

// parsePageURL checks that raw is an absolute http(s) URL.
func parsePageURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webagents: %q is not an http(s) URL", truncate(raw, 200))
	}
	return u, nil
}

// Discover looks for the manifest of the page at pageURL: /webagents.md,
// then /.well-known/webagents.json, on the page's origin. It returns an
// error only for a pageURL that is not an http(s) URL or when ctx ends;
// every other outcome is a status in the Discovery.
//
// When ctx has no deadline, discovery is bounded by c.DiscoverTimeout
// (DefaultDiscoverTimeout); a site that does not answer in time is
// DiscoveryUnavailable with an error matching context.DeadlineExceeded.
func (c *Client) Discover(ctx context.Context, pageURL string) (*Discovery, error) {
	page, err := parsePageURL(pageURL)
	if err != nil {
		return nil, err
	}
	bounded, cancel := withDefaultTimeout(ctx, c.DiscoverTimeout, DefaultDiscoverTimeout)
	defer cancel()
	return c.discover(ctx, bounded, page)
}

// discover runs discovery on bounded; caller is the caller's own context,
// whose end is an error rather than a status.
func (c *Client) discover(caller, ctx context.Context, page *url.URL) (*Discovery, error) {
	origin := originOf(page)
	hc := c.sameOriginClient(origin)
	var first *Discovery // the first recorded failure
	for _, p := range []string{MarkdownPath, WellKnownPath} {
		d := &Discovery{PageURL: page.String(), DocumentURL: origin + p}
		c.discoverOne(ctx, hc, page, d)
		if caller.Err() != nil {
			return nil, caller.Err()
		}
		if ctx.Err() != nil {
			// The Client's own budget is spent: fall back.
			d.Status, d.Err = DiscoveryUnavailable, ended(ctx, d.Err)
			if first == nil {
				first = d
			}
			break
		}
		if d.Status == DiscoveryFound {
			return d, nil
		}
		if c.Logger != nil {
			c.Logger.DebugContext(ctx, "webagents: discovery", slog.String("document", d.DocumentURL),
				slog.String("status", d.Status.String()))
		}
		if d.Status != DiscoveryAbsent && first == nil {
			first = d
		}
	}
	if first != nil {
		return first, nil
	}
	return &Discovery{Status: DiscoveryAbsent, PageURL: page.String(), DocumentURL: origin + WellKnownPath, Err: ErrNoManifest}, nil
}

func (c *Client) discoverOne(ctx context.Context, hc *http.Client, page *url.URL, d *Discovery) {
	f, err := c.fetch(ctx, hc, http.MethodGet, d.DocumentURL, maxUTF8Bytes(MaxDocumentChars))
	switch {
	case errors.Is(err, ErrUnsafeRedirect):
		d.Status, d.Err = DiscoveryUnsafe, ErrUnsafeRedirect
		return
	case errors.Is(err, ErrTooManyRedirects):
		d.Status, d.Err = DiscoveryUnsafe, ErrTooManyRedirects
		return
	case err != nil:
		d.Status, d.Err = DiscoveryUnavailable, err
		return
	case f.Status == http.StatusNotFound || f.Status == http.StatusGone:
		d.Status, d.Err = DiscoveryAbsent, ErrNoManifest
		return
	case f.Status != http.StatusOK:
		d.Status, d.Err = DiscoveryUnavailable, fmt.Errorf("webagents: %s answered %d", d.DocumentURL, f.Status)
		return
	case f.TooLarge:
		d.Status, d.Err = DiscoveryInvalid, ErrDocumentTooLarge
		return
	}
	m, err := ParseDocument(f.Body, nil)
	switch {
	case errors.Is(err, ErrNoManifest):
		d.Status, d.Err = DiscoveryAbsent, err
		return
	case err != nil:
		d.Status, d.Err = DiscoveryInvalid, err
		return
	}
	endpoint, err := resolveEndpoint(page, m.Workflow.Endpoint)
	if err != nil {
		d.Status, d.Err = DiscoveryUnsafe, err
		return
	}
	d.Status, d.Manifest, d.Endpoint = DiscoveryFound, m, endpoint.String()
	d.Actions = m.ActionsFor(page.EscapedPath())
	d.Warnings = m.Warnings
}

// resolveEndpoint resolves a manifest's endpoint against the page URL, as
// the real client does, and requires the page's origin.
func resolveEndpoint(page *url.URL, endpoint string) (*url.URL, error) {
	ref, err := url.Parse(endpoint)
	if err != nil {
		return nil, ErrCrossOriginEndpoint
	}
	u := page.ResolveReference(ref)
	if (u.Scheme != "http" && u.Scheme != "https") || originOf(u) != originOf(page) {
		return nil, ErrCrossOriginEndpoint
	}
	u.Fragment = ""
	return u, nil
}

// DiscoveryError is returned by Client.Run when the page has no usable
// manifest. It matches ErrNotAvailable and the discovery's own error.
type DiscoveryError struct {
	Discovery *Discovery
}

func (e *DiscoveryError) Error() string {
	msg := "webagents: not available on this page (" + e.Discovery.Status.String() + ")"
	if e.Discovery.Err != nil {
		msg += ": " + e.Discovery.Err.Error()
	}
	return msg
}

// Unwrap returns ErrNotAvailable and the discovery's error.
func (e *DiscoveryError) Unwrap() []error { return []error{ErrNotAvailable, e.Discovery.Err} }

// ConsentError is returned by Client.Run, before anything is sent, for an
// operation whose effect the caller did not allow. It matches
// ErrConsentRequired.
type ConsentError struct {
	Operation string
	Action    string
	Effect    Effect
}

func (e *ConsentError) Error() string {
	need := "AllowWrites"
	if e.Effect == EffectIrreversible {
		need = "AllowIrreversible"
	}
	return fmt.Sprintf("webagents: operation %q runs %s action %q; set RunOptions.%s to allow it",
		e.Operation, e.Effect, e.Action, need)
}

// Unwrap returns ErrConsentRequired.
func (e *ConsentError) Unwrap() error { return ErrConsentRequired }

// RunOptions are the caller's permissions and request options for Run. The
// zero value (or nil) allows reads only.
type RunOptions struct {
	// AllowWrites permits actions whose effect is "write".
	AllowWrites bool
	// AllowIrreversible permits actions whose effect is "irreversible"
	// (such as placing an order).
	AllowIrreversible bool
	// IdempotencyKey, when set, is sent as the Idempotency-Key header so that
	// a retried batch runs at most once.
	IdempotencyKey string
}

// RunResult is the outcome of a batch the server answered.
type RunResult struct {
	// Discovery is the discovery the batch was planned with.
	Discovery *Discovery
	// StatusCode is the HTTP status of the response.
	StatusCode int
	// Response is the decoded envelope.
	Response *Response
	// Replayed is true when the server replayed a stored response for the
	// Idempotency-Key.
	Replayed bool
}

// Run discovers the page's manifest, checks that every operation's action is
// published and in scope for the page, enforces the caller's consent for
// writes and irreversible actions, plans the batch (sending the inferred
// dependencies as dependsOn) and POSTs it to the endpoint.
//
// Before anything is sent it returns a *DiscoveryError (ErrNotAvailable), an
// error matching ErrNotInScope, a *ConsentError (ErrConsentRequired), or the
// planner's *Error. When the server answers with ok false, Run returns the
// RunResult and an *Error carrying the top-level code, message, status and
// failing operation.
func (c *Client) Run(ctx context.Context, pageURL string, ops []Operation, opts *RunOptions) (*RunResult, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	page, err := parsePageURL(pageURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx, c.RunTimeout, DefaultRunTimeout)
	defer cancel()
	d, err := c.discover(ctx, ctx, page)
	if err != nil {
		return nil, ended(ctx, err)
	}
	if d.Status != DiscoveryFound {
		return nil, &DiscoveryError{Discovery: d}
	}
	m := d.Manifest
	for _, op := range ops {
		a := m.Actions[op.Action]
		if a == nil || !a.InScope(normalizePath(page.EscapedPath())) {
			return nil, fmt.Errorf("%w: operation %q, action %q", ErrNotInScope, truncate(op.ID, 64), truncate(op.Action, 64))
		}
		switch {
		case a.Effect == EffectWrite && !opts.AllowWrites,
			a.Effect == EffectIrreversible && !opts.AllowIrreversible:
			return nil, &ConsentError{Operation: op.ID, Action: op.Action, Effect: a.Effect}
		}
	}
	body, err := buildBatch(m, page, ops)
	if err != nil {
		return nil, err
	}
	return c.post(ctx, d, page, body, opts)
}

// buildBatch plans the batch locally (catching graph and input errors before
// sending) and encodes it with the planner's edges as dependsOn.
func buildBatch(m *Manifest, page *url.URL, ops []Operation) ([]byte, error) {
	b := &Batch{Version: Version, Operations: make([]Operation, len(ops))}
	for i, op := range ops {
		if op.Input == nil {
			op.Input = json.RawMessage("{}")
		}
		b.Operations[i] = op
	}
	// Round-trip through the server's decoder so the client refuses what a
	// server would.
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("webagents: encode batch: %w", err)
	}
	decoded, err := DecodeBatch(raw)
	if err != nil {
		return nil, err
	}
	plan, err := NewPlan(m, page.EscapedPath(), decoded)
	if err != nil {
		return nil, err
	}
	for i := range decoded.Operations {
		decoded.Operations[i].DependsOn = plan.DependsOn(i)
	}
	decoded.Pacing = &m.Workflow.Pacing
	return json.Marshal(decoded)
}

func (c *Client) post(ctx context.Context, d *Discovery, page *url.URL, body []byte, opts *RunOptions) (*RunResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent())
	req.Header.Set("Origin", originOf(page))
	req.Header.Set("Referer", page.String())
	if opts.IdempotencyKey != "" {
		key, _, err := idempotencyKey([]string{opts.IdempotencyKey})
		if err != nil {
			return nil, fmt.Errorf("webagents: idempotency key: %w", err)
		}
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	hc := *c.httpClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webagents: post batch: %w", ended(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("webagents: the endpoint answered with a redirect (%d), which is refused", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, TransportLimitBytes+1))
	if err != nil {
		return nil, fmt.Errorf("webagents: read response: %w", ended(ctx, err))
	}
	if len(raw) > TransportLimitBytes {
		return nil, fmt.Errorf("webagents: response exceeds %d bytes", TransportLimitBytes)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("webagents: response is %q, not application/json (status %d)", truncate(mt, 60), resp.StatusCode)
	}
	env, err := decodeResponse(raw)
	if err != nil || env.Protocol != Protocol {
		return nil, fmt.Errorf("webagents: response is not a %s envelope (status %d)", Protocol, resp.StatusCode)
	}
	res := &RunResult{
		Discovery: d, StatusCode: resp.StatusCode, Response: env,
		Replayed: strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"),
	}
	if !env.OK {
		return res, &Error{Status: resp.StatusCode, Code: env.Code, Message: env.Error, Operation: env.Operation}
	}
	return res, nil
}

var errAmbiguousEnvelope = errors.New("webagents: ambiguous response envelope")

// decodeResponse decodes a response envelope. Its own members must be
// unambiguous: no duplicate keys, no case variants of the envelope's keys,
// no duplicate operation ids, strict operation errors. Results are the
// site's data and are relayed as sent: operation ids are case-sensitive
// ("a" and "A" are two operations) and a result may hold any JSON.
func decodeResponse(raw []byte) (*Response, error) {
	env := &Response{}
	members := map[string]any{"ok": &env.OK, "protocol": &env.Protocol, "pacing": &env.Pacing,
		"error": &env.Error, "code": &env.Code, "operation": &env.Operation, "skipped": &env.Skipped}
	seen := map[string]bool{}
	err := objectMembers(raw, func(key string, value json.RawMessage) error {
		folded := strings.ToLower(key)
		if seen[folded] {
			return errAmbiguousEnvelope
		}
		seen[folded] = true
		if dst, ok := members[key]; ok {
			return strictjson.Unmarshal(value, dst)
		}
		switch key {
		case "results":
			env.Results = map[string]json.RawMessage{}
			return objectMembers(value, func(id string, result json.RawMessage) error {
				env.Results[id] = result
				return nil
			})
		case "errors":
			env.Errors = map[string]OperationError{}
			return objectMembers(value, func(id string, e json.RawMessage) error {
				var oe OperationError
				if err := strictjson.Unmarshal(e, &oe); err != nil {
					return err
				}
				env.Errors[id] = oe
				return nil
			})
		}
		return nil // unknown members are ignored
	})
	if err != nil {
		return nil, err
	}
	return env, nil
}

// objectMembers calls fn with each member of the JSON object data, in
// order, refusing duplicate keys, a value that is not an object, and
// trailing data. Unlike strictjson it looks at this object's keys only.
func objectMembers(data []byte, fn func(key string, value json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errAmbiguousEnvelope
	}
	keys := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if keys[key] {
			return errAmbiguousEnvelope
		}
		keys[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := fn(key, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errAmbiguousEnvelope
	}
	return nil
}
