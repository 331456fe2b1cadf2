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
	"unicode/utf8"

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
	// DefaultRunTimeout bounds Run (the batch, whose server deadline is
	// 30 s by default) and DiscoverAndRun (discovery and the batch) when
	// the caller's context has no deadline.
	DefaultRunTimeout = 45 * time.Second
	// MaxResponseHeaderBytes bounds the response headers the [Client]'s own
	// transport reads (used when Client.HTTPClient is nil).
	MaxResponseHeaderBytes = 64 << 10
)

// Response bodies are capped on every fetch: a discovery document at
// 4 × MaxDocumentChars bytes (and MaxDocumentChars code points), a batch
// response at TransportLimitBytes; HEAD bodies are never read.

// defaultTransport is the transport of a [Client] without an HTTPClient: the
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
	// [MaxResponseHeaderBytes]. Its CheckRedirect is replaced: discovery
	// follows at most 5 same-origin redirects and the workflow endpoint is
	// never followed. Its Timeout, if any, applies to each request.
	HTTPClient *http.Client
	// DiscoverTimeout bounds Discover when ctx has no deadline; 0 means
	// [DefaultDiscoverTimeout], a negative value no bound.
	DiscoverTimeout time.Duration
	// CheckTimeout bounds Check when ctx has no deadline; 0 means
	// [DefaultCheckTimeout], a negative value no bound.
	CheckTimeout time.Duration
	// RunTimeout bounds Run, and DiscoverAndRun with its discovery, when
	// ctx has no deadline; 0 means [DefaultRunTimeout], a negative value no
	// bound.
	RunTimeout time.Duration
	// UserAgent is sent with every request; "" means
	// "agentbridge-webagents/0.1".
	UserAgent string
	// Logger receives discovery and run diagnostics; nil is silent.
	Logger *slog.Logger
}

// DiscoveryStatus says whether a page publishes a usable manifest. Its
// zero value, [DiscoveryUnknown], claims nothing.
type DiscoveryStatus int

// Discovery statuses. Only [DiscoveryFound] is a usable manifest: every
// other status comes with a *[DiscoveryError] from [Client.Discover] and
// means "fall back to normal browsing".
const (
	DiscoveryUnknown     DiscoveryStatus = iota // the zero value: no discovery was made
	DiscoveryFound                              // a valid, same-origin manifest with actions for the page
	DiscoveryAbsent                             // 404/410 at both paths, or no manifest in the documents
	DiscoveryInvalid                            // a document or manifest that breaks the rules
	DiscoveryUnsafe                             // a cross-origin redirect or endpoint
	DiscoveryUnavailable                        // a transport failure or an unexpected status
	// DiscoveryNoActions is a valid manifest none of whose actions is in
	// scope for the page's path: the site publishes nothing for this page
	// (Manifest and Endpoint are set, Actions is empty).
	DiscoveryNoActions
)

var discoveryStatusNames = [...]string{"unknown", "found", "absent", "invalid", "unsafe", "unavailable", "no actions for this page"}

// ErrNoActionsForPage is the Err of a [DiscoveryNoActions] discovery.
var ErrNoActionsForPage = errors.New("webagents: the site publishes no actions for this page")

// String returns "unknown", "found", "absent", "invalid", "unsafe",
// "unavailable" or "no actions for this page".
func (s DiscoveryStatus) String() string {
	if s >= 0 && int(s) < len(discoveryStatusNames) {
		return discoveryStatusNames[s]
	}
	return fmt.Sprintf("DiscoveryStatus(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler.
func (s DiscoveryStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: it reads what
// [DiscoveryStatus.String] writes, so that a status survives a round trip
// through JSON.
func (s *DiscoveryStatus) UnmarshalText(text []byte) error {
	for i, name := range discoveryStatusNames {
		if string(text) == name {
			*s = DiscoveryStatus(i)
			return nil
		}
	}
	return fmt.Errorf("webagents: unknown discovery status %q", text)
}

// Discovery is the outcome of [Client.Discover]: a usable manifest, or,
// inside a *[DiscoveryError], why there is none.
//
// [Client.Run] reads PageURL and Manifest only: a caller that keeps
// manifests (from Discover, [ParseDocument] or [ParseManifest]) may build a
// Discovery from those two.
type Discovery struct {
	// Status is DiscoveryFound for a Discovery returned with a nil error.
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
	// Err says why the status is not [DiscoveryFound]: ErrNoManifest,
	// [ErrDocumentTooLarge], a *[ValidationError], [ErrUnsafeRedirect],
	// [ErrTooManyRedirects], [ErrCrossOriginEndpoint], or a transport error.
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

// clientTimeoutError is the cause of a [Client]'s own timeout.
type clientTimeoutError struct{ after time.Duration }

func (e *clientTimeoutError) Error() string {
	return "webagents: timed out: the site did not answer within " + e.after.String()
}

// Unwrap returns context.DeadlineExceeded.
func (e *clientTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ended returns the error of a fetch whose context has ended: the [Client]'s
// own timeout when that is the cause, otherwise err.
func ended(ctx context.Context, err error) error {
	var te *clientTimeoutError
	if cause := context.Cause(ctx); errors.As(cause, &te) {
		return te
	}
	return err
}

// sameOriginClient returns a copy of the HTTP client that follows at most
// [MaxRedirects] redirects within origin.
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
	u, err := url.Parse(browserSlashes(raw)) // as a browser reads http(s) URLs
	if err == nil && u.Scheme != "http" && u.Scheme != "https" {
		u, err = url.Parse(raw)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webagents: %q is not an http(s) URL", truncate(raw, 200))
	}
	return u, nil
}

// Discover looks for the manifest of the page at pageURL: /webagents.md,
// then /.well-known/webagents.json, on the page's origin.
//
// A nil error means the page has a usable manifest: the Discovery's Status
// is [DiscoveryFound] and its Manifest, Endpoint and Actions are set; pass
// it to [Client.Run]. When there is none, the error is a *[DiscoveryError]
// carrying the Discovery, which says why (absent, invalid, unsafe,
// unavailable, no actions for this page): it matches [ErrNotAvailable] and
// the Discovery's Err ([ErrNoManifest], [ErrNoActionsForPage],
// [ErrUnsafeRedirect], a *[ValidationError]…), and the caller should fall
// back to normal browsing. Any other error is a pageURL that is not an
// http(s) URL, or ctx's own end.
//
// When ctx has no deadline, discovery is bounded by c.DiscoverTimeout
// ([DefaultDiscoverTimeout]); a site that does not answer in time is
// [DiscoveryUnavailable] with an error matching context.DeadlineExceeded.
func (c *Client) Discover(ctx context.Context, pageURL string) (*Discovery, error) {
	page, err := parsePageURL(pageURL)
	if err != nil {
		return nil, err
	}
	bounded, cancel := withDefaultTimeout(ctx, c.DiscoverTimeout, DefaultDiscoverTimeout)
	defer cancel()
	d, err := c.discover(ctx, bounded, page)
	if err != nil {
		return nil, err
	}
	if d.Status != DiscoveryFound {
		return nil, &DiscoveryError{Discovery: d}
	}
	return d, nil
}

// discover runs discovery on bounded; caller is the caller's own context,
// whose end is an error rather than a status. The Discovery it returns has
// any status but DiscoveryUnknown.
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
		if d.Status == DiscoveryFound || d.Status == DiscoveryNoActions {
			return d, nil // a manifest was found: the other document is not read
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
	if len(d.Actions) == 0 {
		d.Status, d.Err = DiscoveryNoActions, ErrNoActionsForPage
	}
}

// resolveEndpoint resolves a manifest's endpoint against the page URL, as
// the real client (a browser's URL parser) does, and requires the page's
// origin.
func resolveEndpoint(page *url.URL, endpoint string) (*url.URL, error) {
	ref, err := url.Parse(browserSlashes(endpoint))
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

// ErrNotPublished means [Client.Run] refused an operation whose action the
// site's manifest does not publish at all.
var ErrNotPublished = errors.New("webagents: action not published by this site")

// DiscoveryError is returned by [Client.Discover], [Client.Run] and
// [Client.DiscoverAndRun] when the page has no usable manifest. Discovery
// says why (its Status and Err; its Manifest is set for
// [DiscoveryNoActions]). It matches [ErrNotAvailable] and the discovery's
// own Err.
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

// Unwrap returns [ErrNotAvailable] and the discovery's error.
func (e *DiscoveryError) Unwrap() []error { return []error{ErrNotAvailable, e.Discovery.Err} }

// ConsentError is returned by [Client.Run], before anything is sent, for an
// operation whose effect the caller did not allow. It matches
// [ErrConsentRequired]. Its Error names the [RunOptions] field that allows
// the effect; a program whose users consent otherwise (a flag, a setting)
// says so with [ConsentError.Refusal].
type ConsentError struct {
	Operation string
	Action    string
	Effect    Effect
}

// Refusal says which operation was refused and what allows it, in the
// words of the caller's own interface: allowWrites and allowIrreversible
// name what its user sets to allow writes and irreversible actions, such
// as "--allow-writes" and "--allow-irreversible". For example
//
//	operation "add" runs write action "cart.add", which needs --allow-writes
func (e *ConsentError) Refusal(allowWrites, allowIrreversible string) string {
	allow := allowWrites
	if e.Effect == EffectIrreversible {
		allow = allowIrreversible
	}
	return fmt.Sprintf("operation %q runs %s action %q, which needs %s", e.Operation, e.Effect, e.Action, allow)
}

// Error returns the [ConsentError.Refusal] naming RunOptions.AllowWrites or
// RunOptions.AllowIrreversible.
func (e *ConsentError) Error() string {
	return "webagents: " + e.Refusal("RunOptions.AllowWrites", "RunOptions.AllowIrreversible")
}

// Unwrap returns [ErrConsentRequired].
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
	// Response is the decoded envelope; nil when the body was not one (the
	// error is then a *[ProtocolError]).
	Response *Response
	// Replayed is true when the server replayed a stored response for the
	// Idempotency-Key: the batch did not run again.
	Replayed bool
	// Body is the response body as received (at most [TransportLimitBytes];
	// nil for a redirect or an oversized body).
	Body []byte
	// Warnings say how a response that is not a strict envelope was read
	// (see [ProtocolError] for the ones that could not be).
	Warnings []string
}

// Run runs ops as one batch on the page of d, a [Discovery] from
// [Client.Discover]: it checks that every operation's action is published
// and in scope for the page, enforces the caller's consent for writes and
// irreversible actions, plans the batch (sending the inferred dependencies
// as dependsOn) and POSTs it to the endpoint. Every check is made against
// d.Manifest, the manifest the caller saw; the POST is the only request.
// Run reads d.PageURL and d.Manifest only: the endpoint is the manifest's,
// resolved against the page (d.Endpoint for a Discovery from Discover), and
// must be on the page's origin. A caller that has only the page's URL calls
// [Client.DiscoverAndRun].
//
// Before anything is sent it returns a *[DiscoveryError] ([ErrNotAvailable])
// for a d without a manifest, an error matching [ErrNotPublished] (the
// manifest has no such action) or [ErrNotInScope] (it has, for other
// pages), a *[ConsentError] ([ErrConsentRequired]), or the planner's
// *[Error]. When the server answers with ok false, Run returns the
// [RunResult] and an *Error carrying the top-level code, message, status
// and failing operation. When it answers with something that is not an
// envelope, Run returns the RunResult (status and body) and a
// *[ProtocolError]: the batch may have run. A 2xx body without the
// envelope's "protocol" member that still has an "ok" boolean and results
// named by operation id (keyed by id, or listed as {"id","result"} or
// {"id","action","output"}) is read leniently, with a warning in
// RunResult.Warnings.
//
// When ctx has no deadline, Run is bounded by c.RunTimeout
// ([DefaultRunTimeout]).
func (c *Client) Run(ctx context.Context, d *Discovery, ops []Operation, opts *RunOptions) (*RunResult, error) {
	if d == nil {
		return nil, errors.New("webagents: Run needs the Discovery of the page")
	}
	page, err := parsePageURL(d.PageURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx, c.RunTimeout, DefaultRunTimeout)
	defer cancel()
	return c.run(ctx, page, d, ops, opts)
}

// DiscoverAndRun discovers the manifest of the page at pageURL, as
// [Client.Discover] does, and runs ops on it, as [Client.Run] does: one or
// two requests more than Run, for a caller that has only the page's URL.
// A page without a usable manifest is a *[DiscoveryError], except that a
// page for which the site publishes no actions ([DiscoveryNoActions])
// refuses each operation as Run does (not published, or not in scope).
//
// When ctx has no deadline, discovery and the batch together are bounded
// by c.RunTimeout ([DefaultRunTimeout]).
func (c *Client) DiscoverAndRun(ctx context.Context, pageURL string, ops []Operation, opts *RunOptions) (*RunResult, error) {
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
	return c.run(ctx, page, d, ops, opts)
}

// run is Run on the parsed page of d.
func (c *Client) run(ctx context.Context, page *url.URL, d *Discovery, ops []Operation, opts *RunOptions) (*RunResult, error) {
	if opts == nil {
		opts = &RunOptions{}
	}
	m := d.Manifest
	switch {
	case m == nil:
		return nil, &DiscoveryError{Discovery: d}
	case len(ops) == 0 && len(m.ActionsFor(page.EscapedPath())) == 0:
		// Nothing asked of a page that has nothing: there is no operation
		// to refuse as not in scope.
		return nil, &DiscoveryError{Discovery: d}
	}
	endpoint, err := resolveEndpoint(page, m.Workflow.Endpoint)
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		a := m.Actions[op.Action]
		if a == nil {
			return nil, fmt.Errorf("%w: operation %q, action %q", ErrNotPublished, truncate(op.ID, 64), truncate(op.Action, 64))
		}
		if !a.InScope(normalizePath(page.EscapedPath())) {
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
	return c.post(ctx, d, endpoint.String(), page, body, ops, opts)
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

func (c *Client) post(ctx context.Context, d *Discovery, endpoint string, page *url.URL, body []byte, ops []Operation, opts *RunOptions) (*RunResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
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
	res := &RunResult{
		Discovery: d, StatusCode: resp.StatusCode,
		Replayed: strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true"),
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	protocolError := func(reason string) *ProtocolError {
		return &ProtocolError{StatusCode: resp.StatusCode, ContentType: truncate(mt, 80), Reason: reason}
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return res, protocolError("the endpoint answered with a redirect, which is never followed")
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, TransportLimitBytes+1))
	if err != nil {
		return nil, fmt.Errorf("webagents: read response: %w", ended(ctx, err))
	}
	if len(raw) > TransportLimitBytes {
		return res, protocolError(fmt.Sprintf("the body exceeds %d bytes", TransportLimitBytes))
	}
	res.Body = raw
	if mt != "application/json" {
		return res, protocolError("the body is not application/json")
	}
	if !utf8.Valid(raw) {
		// Never read as U+FFFD: the module refuses invalid UTF-8 everywhere.
		return res, protocolError("the body is not valid UTF-8")
	}
	// Results are relayed as sent, to readers that may resolve a duplicate
	// key or decode a lone surrogate escape ("\ud800") differently: refuse
	// both anywhere in the body, as in manifests and batches. Other syntax
	// errors are left to the readings below.
	var se *strictjson.SyntaxError
	var ke *strictjson.KeyError
	switch err := strictjson.CheckDuplicates(raw); {
	case errors.As(err, &ke):
		return res, protocolError("the body has a duplicate key")
	case errors.As(err, &se) && strings.HasPrefix(se.Msg, "invalid UTF-8"):
		return res, protocolError("the body is not valid UTF-8: it escapes a lone surrogate")
	}
	known := make(map[string]bool, len(ops))
	actionOf := make(map[string]string, len(ops))
	for _, op := range ops {
		known[op.ID], actionOf[op.ID] = true, op.Action
	}
	env, err := decodeResponse(raw, known)
	var unknown *unknownOperationError
	switch {
	case errors.As(err, &unknown):
		// Results are relayed to a model and printed: a site's answer for
		// operations nobody asked for (thousands of them) is not read.
		return res, protocolError(fmt.Sprintf("the envelope names operation %q in %q, which is not in the batch",
			truncate(unknown.id, 64), unknown.member))
	case err == nil && env.Protocol == Protocol:
		res.Response = env
	case (err != nil || env.Protocol == "") && resp.StatusCode >= 200 && resp.StatusCode < 300:
		lenient, ok := lenientResponse(raw, actionOf)
		if !ok {
			return res, protocolError(`the body has no "protocol" member and no "ok" boolean with results named by operation id`)
		}
		res.Response = lenient
		res.Warnings = append(res.Warnings, "the response is not a "+Protocol+
			` envelope (it has no "protocol" member); it was read leniently from its "ok" and its results named by operation id`)
	case err != nil:
		return res, protocolError("the body is not an unambiguous JSON object")
	default:
		return res, protocolError("the body is not a " + Protocol + " envelope")
	}
	if !res.Response.OK {
		return res, &Error{Status: resp.StatusCode, Code: res.Response.Code, Message: res.Response.Error, Operation: res.Response.Operation}
	}
	return res, nil
}

// ErrProtocol is matched by a [*ProtocolError].
var ErrProtocol = errors.New("webagents: the response is not a " + Protocol + " envelope")

// ProtocolError is returned by [Client.Run], with the [RunResult], when the
// endpoint answered with something that is not a WebAgents envelope (a
// redirect, HTML, an oversized or malformed body, another protocol). The
// batch may have run, in part or whole: do not resend it without an
// Idempotency-Key. RunResult.Body holds the body as received. It matches
// errors.Is(err, [ErrProtocol]).
type ProtocolError struct {
	StatusCode  int    // the HTTP status
	ContentType string // the media type of the body, without parameters
	Reason      string // what is wrong with the response
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("webagents: the endpoint answered %d (%s) with a response that is not a %s envelope: %s; the batch may have run",
		e.StatusCode, cmpOr(e.ContentType, "no content type"), Protocol, e.Reason)
}

// Unwrap returns [ErrProtocol].
func (e *ProtocolError) Unwrap() error { return ErrProtocol }

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// lenientResponse reads a 2xx JSON body without the envelope's "protocol"
// member when its meaning is unambiguous: an "ok" boolean and, when present,
// "results" as an object keyed by operation ids of the batch, or as an array
// of objects each naming an operation of the batch by "id" (each once) with
// its "result" or its "output" (one of the two: the Node bench site of
// kowo-co/betterwright-bench answers {"id","action","output"}) and, if it
// says, the operation's own "action". actionOf maps the batch's operation
// ids to their actions. Results are never guessed: an operation the body
// does not name has none. Anything else is not read.
func lenientResponse(raw []byte, actionOf map[string]string) (*Response, bool) {
	var body map[string]json.RawMessage
	if strictjson.Unmarshal(raw, &body) != nil {
		return nil, false
	}
	env := &Response{}
	if _, has := body["protocol"]; has || json.Unmarshal(body["ok"], &env.OK) != nil {
		return nil, false
	}
	if r, ok := body["results"]; ok {
		env.Results = map[string]json.RawMessage{}
		var keyed map[string]json.RawMessage
		var listed []map[string]json.RawMessage
		switch {
		case strictjson.Unmarshal(r, &keyed) == nil:
			for id, v := range keyed {
				if _, known := actionOf[id]; !known {
					return nil, false
				}
				env.Results[id] = v
			}
		case strictjson.Unmarshal(r, &listed) == nil:
			for _, entry := range listed {
				id, result, ok := listedResult(entry, actionOf)
				if !ok || env.Results[id] != nil {
					return nil, false
				}
				env.Results[id] = result
			}
		default:
			return nil, false
		}
	} else if env.OK {
		return nil, false // success that names no operation: nothing to read
	}
	if !env.OK {
		_ = json.Unmarshal(body["error"], &env.Error)
		_ = json.Unmarshal(body["code"], &env.Code)
	}
	return env, true
}

// listedResult reads one entry of a "results" array: the operation it names
// by "id", which must be the batch's, and its "result" or "output", exactly
// one of them. An "action" member, when present, must be that operation's
// action: an entry that says another action ran is not read.
func listedResult(entry map[string]json.RawMessage, actionOf map[string]string) (id string, result json.RawMessage, ok bool) {
	if json.Unmarshal(entry["id"], &id) != nil {
		return "", nil, false
	}
	action, known := actionOf[id]
	if !known {
		return "", nil, false
	}
	if said, has := entry["action"]; has {
		var name string
		if json.Unmarshal(said, &name) != nil || name != action {
			return "", nil, false
		}
	}
	r, hasResult := entry["result"]
	o, hasOutput := entry["output"]
	switch {
	case hasResult && !hasOutput:
		return id, r, true
	case hasOutput && !hasResult:
		return id, o, true
	}
	return "", nil, false // neither, or both: which one is the result?
}

var errAmbiguousEnvelope = errors.New("webagents: ambiguous response envelope")

// unknownOperationError is decodeResponse's refusal of an envelope that
// names an operation the batch does not have.
type unknownOperationError struct{ member, id string }

func (e *unknownOperationError) Error() string {
	return fmt.Sprintf("webagents: the envelope's %q names operation %q, which is not in the batch", e.member, truncate(e.id, 64))
}

// decodeResponse decodes a response envelope. Its own members must be
// unambiguous: no duplicate keys, no case variants of the envelope's keys,
// no duplicate operation ids, strict operation errors. Results are the
// site's data and are relayed as sent: operation ids are case-sensitive
// ("a" and "A" are two operations) and a result may hold any JSON. When
// known is not nil, "results", "errors" and "skipped" may name only its
// operations (an *unknownOperationError, at the first other one).
func decodeResponse(raw []byte, known map[string]bool) (*Response, error) {
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
			if err := strictjson.Unmarshal(value, dst); err != nil {
				return err
			}
			if key == "skipped" && known != nil {
				for _, id := range env.Skipped {
					if !known[id] {
						return &unknownOperationError{member: key, id: id}
					}
				}
			}
			return nil
		}
		switch key {
		case "results":
			env.Results = map[string]json.RawMessage{}
			return objectMembers(value, func(id string, result json.RawMessage) error {
				if known != nil && !known[id] {
					return &unknownOperationError{member: key, id: id}
				}
				env.Results[id] = result
				return nil
			})
		case "errors":
			env.Errors = map[string]OperationError{}
			return objectMembers(value, func(id string, e json.RawMessage) error {
				if known != nil && !known[id] {
					return &unknownOperationError{member: key, id: id}
				}
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
