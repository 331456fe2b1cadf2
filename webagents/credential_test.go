package webagents

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rotatingSite is a site that writes its own session code: a cookie names a
// session; signing in replaces the cookie (against session fixation), so
// the replaced one resolves to nothing. Its context hook follows the rule
// of WithCredential: the cookie as presented, also when it resolves to no
// session, and CredentialReplaced when an action replaces it.
type rotatingSite struct {
	mu      sync.Mutex
	byToken map[string]string // cookie value → user ("" while anonymous)
	next    int
	orders  map[string]int // user → orders placed
}

func (s *rotatingSite) token() string {
	s.next++
	return fmt.Sprintf("secret-token-%d", s.next)
}

// rotatingRequest is one request's view of its session, as the actions
// share it.
type rotatingRequest struct {
	w    http.ResponseWriter
	user string // "" while anonymous or without a session
}

type rotatingRequestKey struct{}

func (s *rotatingSite) context(w http.ResponseWriter, r *http.Request) (context.Context, error) {
	req := &rotatingRequest{w: w}
	ctx := context.WithValue(r.Context(), rotatingRequestKey{}, req)
	c, err := r.Cookie("sid")
	if err != nil {
		return ctx, nil
	}
	ctx = WithCredential(ctx, c.Value)
	s.mu.Lock()
	user, ok := s.byToken[c.Value]
	s.mu.Unlock()
	if !ok {
		return ctx, nil // unknown or replaced: no session
	}
	req.user = user
	return WithSessionKey(ctx, "session-of-"+c.Value), nil
}

func (s *rotatingSite) handler(t *testing.T, store IdempotencyStore) *Handler {
	t.Helper()
	m := manifestWith(t, "", `{"signIn":{"effect":"write"},"order":{"effect":"irreversible"}}`)
	h, err := NewHandler(m, map[string]ActionHandler{
		"signIn": ActionFunc(func(ctx context.Context, ar *ActionRequest) (any, error) {
			var in struct {
				User string `json:"user"`
			}
			if err := ar.Decode(&in); err != nil {
				return nil, err
			}
			req := ctx.Value(rotatingRequestKey{}).(*rotatingRequest)
			s.mu.Lock()
			for token, user := range s.byToken {
				if user == req.user && user == "" {
					delete(s.byToken, token) // the anonymous session's cookie is replaced
				}
			}
			next := s.token()
			s.byToken[next] = in.User
			s.mu.Unlock()
			req.user = in.User
			http.SetCookie(req.w, &http.Cookie{Name: "sid", Value: next})
			CredentialReplaced(ctx, next)
			return map[string]any{"signedIn": true}, nil
		}),
		"order": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
			req := ctx.Value(rotatingRequestKey{}).(*rotatingRequest)
			if req.user == "" {
				return nil, &Error{Status: 401, Code: CodeUnauthorized, Message: "Sign in first."}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.orders[req.user]++
			return map[string]int{"order": s.orders[req.user]}, nil
		}),
	}, &HandlerOptions{Origin: testOrigin, Context: s.context, IdempotencyStore: store})
	require.NoError(t, err)
	return h
}

// keyRecordingStore is a memory store that records every key and client it
// is given.
type keyRecordingStore struct {
	*MemoryIdempotencyStore
	mu   sync.Mutex
	seen []string
}

func (s *keyRecordingStore) Reserve(ctx context.Context, r IdempotencyReservation) (*IdempotencyRecord, error) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Key, r.Client)
	s.mu.Unlock()
	return s.MemoryIdempotencyStore.Reserve(ctx, r)
}

// TestHandlerKeyScopeSurvivesCredentialRotation: a keyed [signIn, order]
// sent with an anonymous session's cookie; the sign-in replaces the cookie;
// the answer is lost. A retry with the old cookie and one with the new are
// both replays (one order). The scope is the credential as presented, so a
// holder of the old cookie (a session-fixation attacker) who knows a later
// batch's key and body gets no replay of it; another client with the key
// gets none either; and no token reaches the store.
func TestHandlerKeyScopeSurvivesCredentialRotation(t *testing.T) {
	site := &rotatingSite{byToken: map[string]string{}, orders: map[string]int{}}
	site.byToken["secret-token-0"] = "" // an anonymous session the visitor already has
	store := &keyRecordingStore{MemoryIdempotencyStore: NewMemoryIdempotencyStore(nil)}
	serve := site.handler(t, store)
	send := func(cookie, key, body string) (status int, replayed, respBody, setCookie string) {
		hdr := map[string]string{"Idempotency-Key": key}
		if cookie != "" {
			hdr["Cookie"] = "sid=" + cookie
		}
		rec := post(serve, body, hdr)
		for _, c := range rec.Result().Cookies() {
			setCookie = c.Value
		}
		return rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Body.String(), setCookie
	}
	batch := `{"version":"0.1","operations":[{"id":"in","action":"signIn","input":{"user":"alice"}},{"id":"o","action":"order"}]}`

	status, _, first, newCookie := send("secret-token-0", "k1", batch)
	require.Equal(t, 200, status, first)
	require.Equal(t, "secret-token-1", newCookie)
	for _, cookie := range []string{"secret-token-0", "secret-token-1"} {
		status, replayed, again, setCookie := send(cookie, "k1", batch)
		assert.Equal(t, 200, status, cookie)
		assert.Equal(t, "true", replayed, "a retry with %s is a replay", cookie)
		assert.Equal(t, first, again)
		assert.Empty(t, setCookie, "a replay hands out no credential")
	}
	assert.Equal(t, 1, site.orders["alice"], "one order")

	// Another client (no cookie, or another's) with the key: no replay.
	status, replayed, _, _ := send("", "k1", batch)
	assert.Empty(t, replayed)
	assert.Equal(t, 200, status, "it ran as its own batch")
	assert.Equal(t, 2, site.orders["alice"])

	// A later batch of the signed-in session; the replaced cookie, with its
	// key and body, gets no replay of it.
	later := `{"version":"0.1","operations":[{"id":"o","action":"order"}]}`
	site.mu.Lock()
	site.byToken["secret-token-9"] = "bob"
	site.mu.Unlock()
	status, _, bobs, _ := send("secret-token-9", "k2", later)
	require.Equal(t, 200, status, bobs)
	status, replayed, stolen, _ := send("secret-token-0", "k2", later)
	assert.Empty(t, replayed, "the replaced cookie does not reach the later batch's record")
	assert.Equal(t, 401, status, stolen)
	assert.NotEqual(t, bobs, stolen)

	store.mu.Lock()
	defer store.mu.Unlock()
	require.NotEmpty(t, store.seen)
	for _, v := range store.seen {
		assert.NotContains(t, v, "secret-token", "the store sees hashes only")
		assert.NotContains(t, v, "alice")
	}
}
