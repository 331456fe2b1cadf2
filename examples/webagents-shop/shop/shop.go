// Package shop is the application code of a small WebAgents demo site: a
// catalog with search and product pages, sign-up and sign-in (PBKDF2-hashed
// passwords, a session cookie), a cart and orders. People use the HTML
// pages; agents use the actions; both run on the same service layer
// (Store).
//
// It is the application code of the webagents-shop example and lives in
// the example's folder, so that the folder copied into another module
// builds. The wiring of the actions into the webagents server adapter is
// not here: the example's main.go shows it with the public API (NewApp,
// Manifest, AgentSession, Actions, webagents.NewHandler, Register). New
// and Serve repeat that wiring for the demo and the module's tests, which
// run the site in-process; the example's tests check that both serve the
// same site.
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

// Options configures NewApp and New. The zero value is usable on a
// loopback listener.
type Options struct {
	// Origin is the public origin ("http://127.0.0.1:8080"). Empty means the
	// loopback address each request arrives on.
	Origin string
	// Pacing is the pacing the manifest publishes and the server enforces
	// (used by New, which wires the site; NewApp ignores it); nil means
	// DefaultPacing.
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

// Shop is the application: the service layer, the sessions and the HTML
// pages (ServeHTTP), and the actions agents run (Actions). It is safe for
// concurrent use and starts no goroutines.
type Shop struct {
	store    *Store
	sessions *sessions
	pages    *http.ServeMux
	origin   string
	logger   *slog.Logger
	onAction func(operation, action string, start time.Time, took time.Duration)
}

// NewApp builds the application with the seeded catalog; nil options mean
// the defaults.
func NewApp(opts *Options) (*Shop, error) {
	if opts == nil {
		opts = &Options{}
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
	s := &Shop{
		store:    newStore(rounds, maxUsers),
		sessions: newSessions(len(origin) > 5 && origin[:5] == "https", maxSessions),
		origin:   origin,
		logger:   opts.Logger,
		onAction: opts.OnAction,
	}
	s.pages = s.routes()
	return s, nil
}

// Manifest returns the shop's manifest, publishing the given pacing.
func Manifest(pacing webagents.Pacing) (*webagents.Manifest, error) {
	return buildManifest(pacing)
}

// Store returns the service layer.
func (s *Shop) Store() *Store { return s.store }

// ServeHTTP serves the HTML pages (not the agent endpoint).
func (s *Shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	s.pages.ServeHTTP(w, r)
}

// AgentSession is the shop's session as the agent endpoint sees it: the
// request's session cookie, if any. Actions that sign in create the
// session (and set its cookie on the response); agent requests without a
// cookie get none until then, so anonymous catalog reads cannot churn the
// session table.
type AgentSession struct {
	shop      *Shop
	w         http.ResponseWriter
	presented string // the session cookie's value as the request presented it

	mu   sync.Mutex
	sess *session // nil until the request has a session
}

// AgentSession loads the session of an agent request. Put it in the
// actions' context with WithAgentSession.
func (s *Shop) AgentSession(w http.ResponseWriter, r *http.Request) *AgentSession {
	as := &AgentSession{shop: s, w: w, sess: s.sessions.find(r)}
	if c, err := r.Cookie(sessionCookie); err == nil {
		as.presented = c.Value
	}
	return as
}

// Credential returns the session cookie's value as the request presented
// it, also when it resolves to no session (unknown, expired, or replaced by
// a sign-in), or "" when the request has none. It is secret: name it with
// webagents.WithCredential, which hashes it before anything stores it.
func (as *AgentSession) Credential() string { return as.presented }

// Key returns the session's public name (not its cookie), or "" when the
// request has no session.
func (as *AgentSession) Key() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess == nil {
		return ""
	}
	return as.sess.id
}

// SignedIn reports whether a user is signed in to the session. A session
// without one is anonymous: any visitor gets one by viewing a page.
func (as *AgentSession) SignedIn() bool { return as.userID() != "" }

type agentSessionKey struct{}

// WithAgentSession returns a context carrying as, which the actions need.
func WithAgentSession(ctx context.Context, as *AgentSession) context.Context {
	return context.WithValue(ctx, agentSessionKey{}, as)
}

// AgentContext is the webagents.ContextFunc of the shop, as
// examples/webagents-shop writes it out: the session in the context, named
// with WithSessionKey when a user is signed in and WithAnonymousSessionKey
// when not (so that fresh cookies are paced by address), and the cookie as
// presented named with WithCredential, also when it resolves to no session
// (a sign-in replaced it), so that the retry of a keyed batch that signed in
// is a replay.
func (s *Shop) AgentContext(w http.ResponseWriter, r *http.Request) (context.Context, error) {
	as := s.AgentSession(w, r)
	ctx := WithAgentSession(r.Context(), as)
	if c := as.Credential(); c != "" {
		ctx = webagents.WithCredential(ctx, c)
	}
	switch {
	case as.Key() == "":
		return ctx, nil
	case as.SignedIn():
		return webagents.WithSessionKey(ctx, as.Key()), nil
	default:
		return webagents.WithAnonymousSessionKey(ctx, as.Key()), nil
	}
}

// userID returns the signed-in user of the request's session, or "".
func (as *AgentSession) userID() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess == nil {
		return ""
	}
	return as.sess.user()
}

// signIn binds userID to the request's session, creating the session when
// there is none, and reports the new cookie to the Handler of ctx's batch.
// Writes run one at a time, so no other operation of the batch touches the
// response headers meanwhile.
func (as *AgentSession) signIn(ctx context.Context, userID string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess == nil {
		as.sess = as.shop.sessions.create(as.w)
	}
	webagents.CredentialReplaced(ctx, as.shop.sessions.signIn(as.w, as.sess, userID))
}

func (as *AgentSession) signOut(ctx context.Context) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.sess != nil {
		webagents.CredentialReplaced(ctx, as.shop.sessions.signOut(as.w, as.sess))
	}
}

func sessionFrom(ctx context.Context) (*AgentSession, error) {
	as, ok := ctx.Value(agentSessionKey{}).(*AgentSession)
	if !ok {
		return nil, errors.New("shop: no session in context")
	}
	return as, nil
}
