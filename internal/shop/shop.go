// Package shop is a small WebAgents demo site: a catalog with search and
// product pages, sign-up and sign-in (PBKDF2-hashed passwords, a session
// cookie), a cart and orders. People use the HTML pages; agents use the
// WebAgents endpoint; both run on the same service layer (Store).
//
// It is internal: examples/webagents-shop serves it, and tests and the demo
// run it in-process with New.
package shop

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

// Options configures New. The zero value is usable on a loopback listener.
type Options struct {
	// Origin is the public origin ("http://127.0.0.1:8080"). Empty means the
	// loopback address each request arrives on.
	Origin string
	// Pacing is the pacing the manifest publishes and the server enforces;
	// nil means 120 ms between starts, 2 at once.
	Pacing *webagents.Pacing
	// PBKDF2Iterations is the password hashing cost; 0 means 600,000.
	// Tests may lower it.
	PBKDF2Iterations int
	// MaxUsers and MaxSessions bound memory; 0 means 10,000 each.
	MaxUsers    int
	MaxSessions int
	// Logger receives server errors; nil is silent.
	Logger *slog.Logger
	// OnAction, when set, is called after each agent action with the
	// operation's id, the action, when the executor started it (after
	// pacing) and how long it took from then.
	// The demo uses it to show pacing. It must not block.
	OnAction func(operation, action string, start time.Time, took time.Duration)
}

// DefaultPacing is the pacing of a shop with no Options.Pacing.
var DefaultPacing = webagents.Pacing{MinIntervalMs: 120, MaxConcurrency: 2}

// Shop is the site: an http.Handler serving the pages, the discovery
// documents and the agent endpoint. It is safe for concurrent use and starts
// no goroutines.
type Shop struct {
	store    *Store
	sessions *sessions
	agent    *webagents.Handler
	pages    *http.ServeMux
	origin   string
	logger   *slog.Logger
	onAction func(operation, action string, start time.Time, took time.Duration)
}

// New builds a shop with the seeded catalog.
func New(opts Options) (*Shop, error) {
	pacing := DefaultPacing
	if opts.Pacing != nil {
		pacing = *opts.Pacing
	}
	rounds := opts.PBKDF2Iterations
	if rounds <= 0 {
		rounds = defaultPBKDF2Rounds
	}
	maxUsers := opts.MaxUsers
	if maxUsers <= 0 {
		maxUsers = defaultMaxUsers
	}
	maxSessions := opts.MaxSessions
	if maxSessions <= 0 {
		maxSessions = defaultMaxSessions
	}
	origin := ""
	if opts.Origin != "" {
		o, err := webagents.ParseOrigin(opts.Origin)
		if err != nil {
			return nil, err
		}
		origin = o
	}
	m, err := buildManifest(pacing)
	if err != nil {
		return nil, err
	}
	s := &Shop{
		store:    newStore(rounds, maxUsers),
		sessions: newSessions(len(origin) > 5 && origin[:5] == "https", maxSessions),
		origin:   origin,
		logger:   opts.Logger,
		onAction: opts.OnAction,
	}
	var limiter webagents.Limiter
	if pacing.MinIntervalMs > 0 {
		limiter = &webagents.SessionLimiter{Interval: time.Duration(pacing.MinIntervalMs) * time.Millisecond}
	}
	s.agent, err = webagents.NewHandler(&webagents.HandlerOptions{
		Origin:   origin,
		Manifest: m,
		Context:  s.agentContext,
		Actions:  s.actions(),
		Limiter:  limiter,
		Logger:   opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	s.pages = s.routes()
	return s, nil
}

// Store returns the service layer.
func (s *Shop) Store() *Store { return s.store }

// Manifest returns the published manifest.
func (s *Shop) Manifest() *webagents.Manifest { return s.agent.Manifest() }

// ServeHTTP serves the site.
func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.EscapedPath() {
	case webagents.MarkdownPath, webagents.WellKnownPath, s.agent.EndpointPath():
		// The agent handler routes by exact path and never redirects.
		s.agent.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	s.pages.ServeHTTP(w, r)
}

// agentSession is what the agent endpoint's context carries. Agent requests
// without a session cookie get no session until they sign up or in, so that
// anonymous catalog reads cannot churn the session table.
type agentSession struct {
	shop *Shop
	w    http.ResponseWriter

	mu   sync.Mutex
	sess *session // nil until the request has a session
}

type agentSessionKey struct{}

func (s *Shop) agentContext(w http.ResponseWriter, r *http.Request) (context.Context, error) {
	as := &agentSession{shop: s, w: w, sess: s.sessions.find(r)}
	ctx := context.WithValue(r.Context(), agentSessionKey{}, as)
	switch {
	case as.sess == nil:
	case as.sess.user() == "":
		// Any visitor gets a session: pace it and charge its stored
		// responses by client address as well.
		ctx = webagents.WithAnonymousSessionKey(ctx, as.sess.id)
	default:
		ctx = webagents.WithSessionKey(ctx, as.sess.id)
	}
	return ctx, nil
}

// userID returns the signed-in user of the request's session, or "".
func (as *agentSession) userID() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess == nil {
		return ""
	}
	return as.sess.user()
}

// signIn binds userID to the request's session, creating the session when
// there is none. Writes run one at a time, so no other operation of the
// batch touches the response headers meanwhile.
func (as *agentSession) signIn(userID string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess == nil {
		as.sess = as.shop.sessions.create(as.w)
	}
	as.shop.sessions.signIn(as.w, as.sess, userID)
}

func (as *agentSession) signOut() {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess != nil {
		as.shop.sessions.signOut(as.w, as.sess)
	}
}

func sessionFrom(ctx context.Context) (*agentSession, error) {
	as, ok := ctx.Value(agentSessionKey{}).(*agentSession)
	if !ok {
		return nil, errors.New("shop: no session in context")
	}
	return as, nil
}
