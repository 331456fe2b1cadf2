package shop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/webagents"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startShop runs a shop on a loopback listener. posts counts POSTs to the
// agent endpoint; a test can forbid them.
func startShop(t *testing.T, opts Options) (*httptest.Server, *Site) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	opts.Origin = "http://" + srv.Listener.Addr().String()
	if opts.PBKDF2Iterations == 0 {
		opts.PBKDF2Iterations = 1000 // keep tests fast; production uses 600,000
	}
	if opts.Pacing == nil {
		opts.Pacing = &webagents.Pacing{MinIntervalMs: 0, MaxConcurrency: 2}
	}
	s, err := New(&opts)
	require.NoError(t, err)
	srv.Config.Handler = s
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, s
}

func agentClient(t *testing.T, srv *httptest.Server) *webagents.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := *srv.Client()
	hc.Jar = jar
	return &webagents.Client{HTTPClient: &hc}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestSearchFindsOneExactProduct(t *testing.T) {
	s := newStore(1000, 10)
	found, err := s.Search("wireless keyboard")
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.Equal(t, "kbd-75", found[0].ID)
	found, err = s.Search("Keyboard")
	require.NoError(t, err)
	assert.Len(t, found, 2)
	found, err = s.Search("   ")
	require.NoError(t, err)
	assert.Empty(t, found)
	_, err = s.Search(strings.Repeat("x", 201))
	assert.ErrorIs(t, err, ErrQueryTooLong)
}

func TestPasswordsAreHashed(t *testing.T) {
	s := newStore(1000, 10)
	u, err := s.SignUp("Alice@Example.com", "correct horse")
	require.NoError(t, err)
	assert.Equal(t, "alice@example.com", u.Email)
	assert.NotContains(t, string(u.hash), "correct horse")
	assert.Len(t, u.hash, passwordKeyLen)
	assert.Len(t, u.salt, passwordSaltLen)
	_, err = s.SignUp("alice@example.com", "another one")
	assert.ErrorIs(t, err, ErrEmailTaken)
	_, err = s.SignUp("bob@example.com", "short")
	assert.ErrorIs(t, err, ErrWeakPassword)
	_, err = s.SignUp("not-an-email", "long enough")
	assert.ErrorIs(t, err, ErrInvalidEmail)
	got, err := s.SignIn("alice@example.com", "correct horse")
	require.NoError(t, err)
	assert.Equal(t, u.ID, got.ID)
	_, err = s.SignIn("alice@example.com", "wrong horse")
	assert.ErrorIs(t, err, ErrBadCredentials)
	_, err = s.SignIn("nobody@example.com", "whatever1")
	assert.ErrorIs(t, err, ErrBadCredentials)
}

func TestSignInThrottled(t *testing.T) {
	s := newStore(1000, 10)
	_, err := s.SignUp("a@example.com", "password1")
	require.NoError(t, err)
	for i := 0; i < maxSignInFailures; i++ {
		_, err = s.SignIn("a@example.com", "wrong")
		assert.ErrorIs(t, err, ErrBadCredentials)
	}
	_, err = s.SignIn("a@example.com", "password1")
	assert.ErrorIs(t, err, ErrTooManyAttempts, "even the right password, while throttled")
}

// TestSignInThrottleHoldsUnderConcurrency: parallel guesses cannot all pass
// the failure check while their password hashes are still running.
func TestSignInThrottleHoldsUnderConcurrency(t *testing.T) {
	s := newStore(100_000, 10) // slow enough that the guesses overlap
	_, err := s.SignUp("a@example.com", "password1")
	require.NoError(t, err)
	const guesses = 24
	results := make(chan error, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Go(func() {
			_, err := s.SignIn("a@example.com", fmt.Sprintf("guess-%d", i))
			results <- err
		})
	}
	wg.Wait()
	close(results)
	checked := 0
	for err := range results {
		if errors.Is(err, ErrBadCredentials) {
			checked++
		} else {
			assert.ErrorIs(t, err, ErrTooManyAttempts)
		}
	}
	assert.LessOrEqual(t, checked, maxSignInFailures, "passwords checked within one window")
}

func TestUserLimit(t *testing.T) {
	s := newStore(1000, 1)
	_, err := s.SignUp("a@example.com", "password1")
	require.NoError(t, err)
	_, err = s.SignUp("b@example.com", "password1")
	assert.ErrorIs(t, err, ErrFull)
}

// TestAgentEndToEnd runs the workflow with the Go client against the
// shop over loopback: find, sign up, add by reference, verify, order.
func TestAgentEndToEnd(t *testing.T) {
	srv, _ := startShop(t, Options{})
	c := agentClient(t, srv)
	page := srv.URL + "/products/kbd-75"

	// Signed out: the add fails, verify is skipped, find keeps its result.
	res, err := c.DiscoverAndRun(t.Context(), page, []webagents.Operation{
		{ID: "find", Action: "catalog.search", Input: raw(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: raw(`{"productId":{"$ref":"find.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}, &webagents.RunOptions{AllowWrites: true})
	var we *webagents.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, webagents.Error{Status: 401, Code: "unauthorized", Message: "Sign in first.", Operation: "add"}, *we)
	assert.Equal(t, []string{"verify"}, res.Response.Skipped)
	assert.JSONEq(t, `"kbd-75"`, mustField(t, res.Response.Results["find"], "productId"))

	res, err = c.DiscoverAndRun(t.Context(), page, []webagents.Operation{
		{ID: "find", Action: "catalog.search", Input: raw(`{"query":"wireless keyboard"}`)},
		{ID: "signup", Action: "account.signUp", Input: raw(`{"email":"agent@example.com","password":"s3cret-pass"}`)},
		{ID: "add", Action: "cart.add", Input: raw(`{"productId":{"$ref":"find.productId"},"quantity":2}`)},
		{ID: "verify", Action: "cart.state"},
	}, &webagents.RunOptions{AllowWrites: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":[{"productId":"kbd-75","name":"Wireless Keyboard 75%","quantity":2,"priceCents":8900}],"totalCents":17800}`,
		string(res.Response.Results["verify"]))
	assert.NotContains(t, string(mustJSON(t, res.Response)), "s3cret-pass", "secrets never appear in results")

	_, err = c.DiscoverAndRun(t.Context(), page, []webagents.Operation{{ID: "order", Action: "order.place"}}, &webagents.RunOptions{AllowWrites: true})
	assert.ErrorIs(t, err, webagents.ErrConsentRequired)

	res, err = c.DiscoverAndRun(t.Context(), page, []webagents.Operation{
		{ID: "order", Action: "order.place"},
		{ID: "orders", Action: "order.list"},
		{ID: "cart", Action: "cart.state"},
	}, &webagents.RunOptions{AllowIrreversible: true, IdempotencyKey: "order-once"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":[],"totalCents":0}`, string(res.Response.Results["cart"]))
	// A retry with the same key replays the response; no second order.
	again, err := c.DiscoverAndRun(t.Context(), page, []webagents.Operation{
		{ID: "order", Action: "order.place"},
		{ID: "orders", Action: "order.list"},
		{ID: "cart", Action: "cart.state"},
	}, &webagents.RunOptions{AllowIrreversible: true, IdempotencyKey: "order-once"})
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	list, err := c.DiscoverAndRun(t.Context(), page, []webagents.Operation{{ID: "o", Action: "order.list"}}, nil)
	require.NoError(t, err)
	var orders struct {
		Orders []Order `json:"orders"`
	}
	require.NoError(t, json.Unmarshal(list.Response.Results["o"], &orders))
	assert.Len(t, orders.Orders, 1)
}

func mustField(t *testing.T, obj json.RawMessage, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return string(m[key])
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestAgentErrors(t *testing.T) {
	srv, _ := startShop(t, Options{})
	c := agentClient(t, srv)
	page := srv.URL + "/products"
	run := func(ops ...webagents.Operation) *webagents.Error {
		_, err := c.DiscoverAndRun(t.Context(), page, ops, &webagents.RunOptions{AllowWrites: true, AllowIrreversible: true})
		var we *webagents.Error
		require.ErrorAs(t, err, &we)
		return we
	}
	assert.Equal(t, webagents.CodeInvalidInput, run(webagents.Operation{ID: "a", Action: "catalog.search", Input: raw(`{"query":""}`)}).Code)
	assert.Equal(t, webagents.CodeInvalidInput, run(webagents.Operation{ID: "a", Action: "catalog.search", Input: raw(`{"query":"x","extra":1}`)}).Code)
	assert.Equal(t, webagents.Code("not_found"), run(webagents.Operation{ID: "a", Action: "catalog.product", Input: raw(`{"productId":"nope"}`)}).Code)
	assert.Equal(t, webagents.CodeUnauthorized, run(webagents.Operation{ID: "a", Action: "account.signIn", Input: raw(`{"email":"x@example.com","password":"wrongpass"}`)}).Code)
	run(webagents.Operation{ID: "s", Action: "account.signUp", Input: raw(`{"email":"e@example.com","password":"password1"}`)}, webagents.Operation{ID: "o", Action: "order.place"})
	e := run(webagents.Operation{ID: "o", Action: "order.place"})
	assert.Equal(t, webagents.Error{Status: 409, Code: "conflict", Message: "The cart is empty.", Operation: "o"}, *e)
}

func TestCheckerOnShopNeverPosts(t *testing.T) {
	var posts int
	srv := httptest.NewUnstartedServer(nil)
	s, err := New(&Options{Origin: "http://" + srv.Listener.Addr().String(), PBKDF2Iterations: 1000})
	require.NoError(t, err)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts++
		}
		s.ServeHTTP(w, r)
	})
	srv.Start()
	defer srv.Close()
	var c webagents.Client
	rep, err := c.Check(t.Context(), srv.URL+"/products/kbd-75")
	require.NoError(t, err)
	assert.True(t, rep.Valid, "%v", rep.Problems)
	assert.Empty(t, rep.Warnings)
	assert.Len(t, rep.ActionsInScope, 11)
	assert.Equal(t, 0, posts)
	home, err := c.Check(t.Context(), srv.URL+"/")
	require.NoError(t, err)
	assert.Len(t, home.ActionsInScope, 6, "cart and order actions are scoped to shopping pages")
}

var csrfPattern = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// browser is a cookie-keeping HTTP client that does not follow redirects.
type browser struct {
	t   *testing.T
	hc  *http.Client
	url string
}

func newBrowser(t *testing.T, srv *httptest.Server) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := *srv.Client()
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: t, hc: &hc, url: srv.URL}
}

func (b *browser) get(path string) (int, string) {
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, b.url+path, nil)
	require.NoError(b.t, err)
	return b.do(req)
}

func (b *browser) do(req *http.Request) (int, string) {
	resp, err := b.hc.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(body)
}

func (b *browser) csrf(path string) string {
	_, body := b.get(path)
	m := csrfPattern.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no CSRF token on %s", path)
	return m[1]
}

func (b *browser) post(path string, form url.Values, origin string) (int, string) {
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.url+path, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return b.do(req)
}

func (b *browser) cookie() string {
	u, _ := url.Parse(b.url)
	for _, c := range b.hc.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			return c.Value
		}
	}
	return ""
}

func TestHTMLFlow(t *testing.T) {
	srv, _ := startShop(t, Options{})
	b := newBrowser(t, srv)
	status, body := b.get("/products?q=wireless+keyboard")
	assert.Equal(t, 200, status)
	assert.Contains(t, body, `href="/products/kbd-75"`)
	assert.NotContains(t, body, "kbd-full")

	status, body = b.get("/products/kbd-75")
	assert.Equal(t, 200, status)
	assert.Contains(t, body, "Wireless Keyboard 75%")
	assert.Contains(t, body, "$89.00")

	status, _ = b.get("/cart")
	assert.Equal(t, http.StatusSeeOther, status, "the cart needs sign-in")

	before := b.cookie()
	token := b.csrf("/signup")
	status, _ = b.post("/signup", url.Values{"csrf": {token}, "email": {"p@example.com"}, "password": {"password123"}}, srv.URL)
	assert.Equal(t, http.StatusSeeOther, status)
	assert.NotEqual(t, before, b.cookie(), "the session token rotates on sign-in")

	token = b.csrf("/products/kbd-75")
	status, _ = b.post("/cart/add", url.Values{"csrf": {token}, "productId": {"kbd-75"}, "quantity": {"1"}}, "")
	assert.Equal(t, http.StatusSeeOther, status)
	status, body = b.get("/cart")
	assert.Equal(t, 200, status)
	assert.Contains(t, body, "Wireless Keyboard 75%")
	assert.Contains(t, body, "$89.00")

	token = b.csrf("/cart")
	status, _ = b.post("/orders", url.Values{"csrf": {token}}, "")
	assert.Equal(t, http.StatusSeeOther, status)
	_, body = b.get("/orders")
	assert.Contains(t, body, "ord-")

	// The agent endpoint sees the same session and service layer.
	c := &webagents.Client{HTTPClient: b.hc}
	res, err := c.DiscoverAndRun(t.Context(), srv.URL+"/orders", []webagents.Operation{{ID: "me", Action: "account.me"}}, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `"p@example.com"`, mustField(t, res.Response.Results["me"], "email"))
}

func TestHTMLFormsRefuseCSRF(t *testing.T) {
	srv, _ := startShop(t, Options{})
	b := newBrowser(t, srv)
	token := b.csrf("/signup")
	form := url.Values{"csrf": {token}, "email": {"v@example.com"}, "password": {"password123"}}
	status, _ := b.post("/signup", form, "https://evil.example")
	assert.Equal(t, http.StatusForbidden, status, "cross-origin form")
	status, _ = b.post("/signup", url.Values{"email": {"v@example.com"}, "password": {"password123"}}, "")
	assert.Equal(t, http.StatusForbidden, status, "missing token")
	status, _ = b.post("/signup", url.Values{"csrf": {"forged"}, "email": {"v@example.com"}, "password": {"password123"}}, "")
	assert.Equal(t, http.StatusForbidden, status, "wrong token")
	other := newBrowser(t, srv)
	status, _ = other.post("/signup", form, "")
	assert.Equal(t, http.StatusForbidden, status, "another session's token")
	status, body := b.post("/signup", url.Values{"csrf": {token}, "email": {"v@example.com"}, "password": {"short"}}, "")
	assert.Equal(t, 400, status)
	assert.Contains(t, body, "Passwords are 8 to 128 characters.")
}

func TestSessionTableBounded(t *testing.T) {
	srv, _ := startShop(t, Options{MaxSessions: 2})
	first := newBrowser(t, srv)
	first.get("/")
	for i := 0; i < 3; i++ {
		newBrowser(t, srv).get("/")
	}
	before := first.cookie()
	first.get("/")
	assert.NotEqual(t, before, first.cookie(), "the oldest session was evicted and replaced")
}

// TestAnonymousVisitsDoNotEvictSignedInSessions: a flood of anonymous page
// views (each gets a session for its CSRF token) must not sign people out.
func TestAnonymousVisitsDoNotEvictSignedInSessions(t *testing.T) {
	srv, _ := startShop(t, Options{MaxSessions: 2})
	user := newBrowser(t, srv)
	token := user.csrf("/signup")
	status, _ := user.post("/signup", url.Values{"csrf": {token}, "email": {"u@example.com"}, "password": {"password123"}}, "")
	require.Equal(t, http.StatusSeeOther, status)
	for range 5 {
		newBrowser(t, srv).get("/")
	}
	status, _ = user.get("/cart")
	assert.Equal(t, http.StatusOK, status, "still signed in")
}

func TestNewRefusesBadOrigin(t *testing.T) {
	_, err := New(&Options{Origin: "ftp://x"})
	assert.Error(t, err)
}

func TestAgentContextWithoutSession(t *testing.T) {
	_, err := sessionFrom(context.Background())
	assert.Error(t, err)
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, &Options{PBKDF2Iterations: 1000}) }()
	var c webagents.Client
	rep, err := c.Check(t.Context(), "http://"+ln.Addr().String()+"/products/kbd-75")
	require.NoError(t, err)
	assert.True(t, rep.Valid, "%v", rep.Problems)
	cancel()
	assert.NoError(t, <-done)
}

func TestAnonymousAgentReadsCreateNoSession(t *testing.T) {
	srv, s := startShop(t, Options{})
	c := agentClient(t, srv)
	for range 3 {
		_, err := c.DiscoverAndRun(t.Context(), srv.URL+"/", []webagents.Operation{{ID: "f", Action: "catalog.search", Input: raw(`{"query":"mouse"}`)}}, nil)
		require.NoError(t, err)
	}
	s.app.sessions.mu.Lock()
	n := len(s.app.sessions.byToken)
	s.app.sessions.mu.Unlock()
	assert.Zero(t, n)
}

func TestOnActionReportsEachAction(t *testing.T) {
	type call struct{ op, action string }
	var mu sync.Mutex
	var calls []call
	s, err := New(&Options{Origin: "http://127.0.0.1:8080", PBKDF2Iterations: 1000,
		Pacing: &webagents.Pacing{MaxConcurrency: 1},
		OnAction: func(op, action string, start time.Time, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			assert.False(t, start.IsZero())
			assert.GreaterOrEqual(t, took, time.Duration(0))
			calls = append(calls, call{op, action})
		}})
	require.NoError(t, err)
	req := httptest.NewRequest("POST", "http://127.0.0.1:8080/api/agent/workflow",
		strings.NewReader(`{"version":"0.1","operations":[{"id":"find","action":"catalog.search","input":{"query":"wireless keyboard"}},{"id":"p","action":"catalog.product","input":{"productId":{"$ref":"find.productId"}}}]}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Equal(t, []call{{"find", "catalog.search"}, {"p", "catalog.product"}}, calls)
}

// TestAgentDisconnectMidBatch is issue 12's scenario against the shop: an
// agent signs up, sends four cart.add and a cart.state with an
// Idempotency-Key and gives up after 0.25 s (pacing makes the batch take
// longer). The batch still runs to the end; retries get 409 while it runs,
// then the stored, complete response; the cart holds all four.
func TestAgentDisconnectMidBatch(t *testing.T) {
	srv, s := startShop(t, Options{Pacing: &webagents.Pacing{MinIntervalMs: 120, MaxConcurrency: 1}})
	c := agentClient(t, srv)
	page := srv.URL + "/products/kbd-75"
	_, err := c.DiscoverAndRun(t.Context(), page, []webagents.Operation{
		{ID: "up", Action: "account.signUp", Input: raw(`{"email":"drop@example.com","password":"password1"}`)}},
		&webagents.RunOptions{AllowWrites: true})
	require.NoError(t, err)
	var ops []webagents.Operation
	for _, id := range []string{"kbd-75", "kbd-full", "mouse-w", "pad-xl"} {
		ops = append(ops, webagents.Operation{ID: "add-" + id, Action: "cart.add", Input: raw(`{"productId":"` + id + `"}`)})
	}
	ops = append(ops, webagents.Operation{ID: "state", Action: "cart.state", DependsOn: []string{"add-kbd-75", "add-kbd-full", "add-mouse-w", "add-pad-xl"}})
	opts := &webagents.RunOptions{AllowWrites: true, IdempotencyKey: "k1"}

	ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
	_, err = c.DiscoverAndRun(ctx, page, ops, opts)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the agent gave up mid-batch")

	var res *webagents.RunResult
	sawInProgress := false
	require.Eventually(t, func() bool {
		res, err = c.DiscoverAndRun(t.Context(), page, ops, opts)
		if errors.Is(err, &webagents.Error{Code: webagents.CodeIdempotencyInProgress}) {
			sawInProgress = true
			return false
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, sawInProgress, "a retry while the batch ran got 409")
	assert.True(t, res.Replayed, "the retry got the stored response")
	assert.True(t, res.Response.OK)
	var state struct {
		Items []struct {
			ProductID string `json:"productId"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(res.Response.Results["state"], &state))
	assert.Len(t, state.Items, 4, "every add ran, and the stored response says so")

	users := s.Store()
	u, err := users.SignIn("drop@example.com", "password1")
	require.NoError(t, err)
	assert.Len(t, users.Cart(u.ID).Items, 4, "the shop's state: four products in the cart")
}
