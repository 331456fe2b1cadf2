package webagents

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewHTTPClient: the client keeps cookies in the jar given and has the
// transport limits of a Client without an HTTPClient: 64 KiB of response
// headers, 1xx responses included.
func TestNewHTTPClient(t *testing.T) {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := NewHTTPClient(jar)
	assert.Same(t, jar, hc.Jar)
	assert.Same(t, (&Client{}).httpClient().Transport, hc.Transport, "one transport configuration")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/headers":
			w.Header().Set("X-Padding", strings.Repeat("a", MaxResponseHeaderBytes))
		case "/hints":
			for range 2000 {
				w.Header().Set("Link", "</style.css>; rel=preload; as=style")
				w.WriteHeader(http.StatusEarlyHints)
			}
		}
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "1"})
	}))
	defer srv.Close()
	resp, err := hc.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Len(t, jar.Cookies(resp.Request.URL), 1)
	for _, path := range []string{"/headers", "/hints"} {
		_, err := hc.Get(srv.URL + path)
		assert.ErrorContains(t, err, "response headers exceeded 65536 bytes", path)
	}
	assert.Nil(t, NewHTTPClient(nil).Jar)
}
