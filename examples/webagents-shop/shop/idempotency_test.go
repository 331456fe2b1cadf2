package shop

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// postKeyed sends a batch with an Idempotency-Key and the given session
// cookie (none when empty), as an agent whose cookie jar did not see the
// answer would; it returns the status, the replay header, the body and the
// session cookie the answer set.
func postKeyed(t *testing.T, srv interface {
	Client() *http.Client
}, endpoint, key, cookie, body string) (status int, replayed, respBody, setCookie string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			setCookie = c.Value
		}
	}
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b), setCookie
}

// TestKeyedSignInBatchRunsOnceOnRetry is issue 21's first scenario: a keyed
// [account.signIn, cart.add, order.place] sent with an existing session
// cookie; the sign-in rotates the cookie (the session-fixation defence); the
// answer is lost and the agent retries with the same key, body and old
// cookie. The retry must be a replay, not a second order — and so must a
// retry that carries the new cookie (the answer's headers arrived, its body
// did not). A replay never carries the new cookie.
func TestKeyedSignInBatchRunsOnceOnRetry(t *testing.T) {
	srv, s := startShop(t, Options{})
	u, err := s.Store().SignUp("retry@example.com", "password1")
	require.NoError(t, err)
	visitor := newBrowser(t, srv)
	visitor.get("/")
	oldCookie := visitor.cookie()
	require.NotEmpty(t, oldCookie, "the visitor has a session before signing in")

	endpoint := srv.URL + s.Agent().EndpointPath()
	body := `{"version":"0.1","operations":[` +
		`{"id":"in","action":"account.signIn","input":{"email":"retry@example.com","password":"password1"}},` +
		`{"id":"add","action":"cart.add","input":{"productId":"kbd-75"}},` +
		`{"id":"order","action":"order.place"}]}`
	status, replayed, first, newCookie := postKeyed(t, srv, endpoint, "order-7", oldCookie, body)
	require.Equal(t, http.StatusOK, status, first)
	require.Empty(t, replayed)
	require.NotEmpty(t, newCookie, "the sign-in set a fresh session cookie")
	require.NotEqual(t, oldCookie, newCookie, "the sign-in rotated the session")

	for _, retry := range []struct{ name, cookie string }{{"old cookie", oldCookie}, {"new cookie", newCookie}} {
		status, replayed, again, setCookie := postKeyed(t, srv, endpoint, "order-7", retry.cookie, body)
		assert.Equal(t, http.StatusOK, status, retry.name)
		assert.Equal(t, "true", replayed, "%s: the retry is a replay", retry.name)
		assert.Equal(t, first, again, "%s: the stored response, unchanged", retry.name)
		assert.Empty(t, setCookie, "%s: a replay never hands out a session cookie", retry.name)
	}
	assert.Len(t, s.Store().Orders(u.ID), 1, "one order, however often the batch is retried")
}
