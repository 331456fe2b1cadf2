package shop

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

const (
	sessionCookie      = "shop_session"
	sessionIdleTimeout = 24 * time.Hour
	defaultMaxSessions = 10_000
)

// session is one visitor's session. Token is the cookie value (secret); ID
// is a separate random name safe to use as a key elsewhere (pacing,
// idempotency).
type session struct {
	mu       sync.Mutex
	token    string
	id       string
	csrf     string
	userID   string
	lastSeen time.Time
}

func (s *session) user() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userID
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessions is a bounded in-memory session table.
type sessions struct {
	secure bool
	max    int

	mu      sync.Mutex
	byToken map[string]*session
}

func newSessions(secure bool, max int) *sessions {
	return &sessions{secure: secure, max: max, byToken: map[string]*session{}}
}

// find returns the request's live session, or nil.
func (t *sessions) find(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) > 64 {
		return nil
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byToken[c.Value]
	if s == nil || now.Sub(s.lastSeen) >= sessionIdleTimeout {
		return nil
	}
	s.lastSeen = now
	return s
}

// load returns the request's session, creating one (and setting its cookie)
// when there is none.
func (t *sessions) load(w http.ResponseWriter, r *http.Request) *session {
	if s := t.find(r); s != nil {
		return s
	}
	return t.create(w)
}

// create starts a new anonymous session and sets its cookie.
func (t *sessions) create(w http.ResponseWriter) *session {
	now := time.Now()
	s := &session{token: randomToken(), id: randomToken(), csrf: randomToken(), lastSeen: now}
	t.mu.Lock()
	t.makeRoom(now)
	t.byToken[s.token] = s
	t.mu.Unlock()
	t.setCookie(w, s.token)
	return s
}

// makeRoom drops idle sessions, then the least recently seen anonymous one
// (a signed-in one only when every session is signed in), when the table
// is full: anyone can create anonymous sessions by viewing pages, and that
// must not sign people out. Called with t.mu held.
func (t *sessions) makeRoom(now time.Time) {
	if len(t.byToken) < t.max {
		return
	}
	var oldest, oldestAnonymous *session
	for k, s := range t.byToken {
		if now.Sub(s.lastSeen) >= sessionIdleTimeout {
			delete(t.byToken, k)
			continue
		}
		if oldest == nil || s.lastSeen.Before(oldest.lastSeen) {
			oldest = s
		}
		if s.user() == "" && (oldestAnonymous == nil || s.lastSeen.Before(oldestAnonymous.lastSeen)) {
			oldestAnonymous = s
		}
	}
	if oldestAnonymous != nil {
		oldest = oldestAnonymous
	}
	if len(t.byToken) >= t.max && oldest != nil {
		delete(t.byToken, oldest.token)
	}
}

// signIn binds a user to the session under a fresh token, so that a token
// known before sign-in (session fixation) is worthless after it. It returns
// the new token.
func (t *sessions) signIn(w http.ResponseWriter, s *session, userID string) string {
	return t.rotate(w, s, userID)
}

func (t *sessions) signOut(w http.ResponseWriter, s *session) string {
	return t.rotate(w, s, "")
}

func (t *sessions) rotate(w http.ResponseWriter, s *session, userID string) string {
	t.mu.Lock()
	s.mu.Lock()
	delete(t.byToken, s.token)
	s.token, s.csrf, s.userID = randomToken(), randomToken(), userID
	t.byToken[s.token] = s
	token := s.token
	s.mu.Unlock()
	t.mu.Unlock()
	t.setCookie(w, token)
	return token
}

func (t *sessions) setCookie(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: token, Path: "/", HttpOnly: true, Secure: t.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(sessionIdleTimeout / time.Second),
	})
}

// validCSRF compares a form's token with the session's in constant time.
func (s *session) validCSRF(token string) bool {
	s.mu.Lock()
	want := s.csrf
	s.mu.Unlock()
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

func (s *session) csrfToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.csrf
}
