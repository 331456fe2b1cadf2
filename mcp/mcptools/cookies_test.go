package mcptools

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSiteCookieJar: a cookie goes back to the origin that set it only, even
// with a Domain attribute that covers the other sites; within an origin the
// public suffix list refuses cookies for a public suffix.
func TestSiteCookieJar(t *testing.T) {
	jar := NewSiteCookieJar()
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return u
	}
	shop := parse("https://shop.example.co.uk/cart")
	jar.SetCookies(shop, []*http.Cookie{
		{Name: "session", Value: "s1", Path: "/"},
		{Name: "wide", Value: "w1", Path: "/", Domain: "example.co.uk"},
		{Name: "suffix", Value: "x1", Path: "/", Domain: "co.uk"},
	})
	names := func(u string) []string {
		var out []string
		for _, c := range jar.Cookies(parse(u)) {
			out = append(out, c.Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"session", "wide"}, names("https://shop.example.co.uk/x"), "co.uk is a public suffix")
	assert.ElementsMatch(t, []string{"session", "wide"}, names("https://SHOP.example.co.uk:443/"), "the same origin")
	for _, other := range []string{
		"https://hostile.example.co.uk/",   // a sibling under the Domain
		"https://shop.example.co.uk:8443/", // another port
		"http://shop.example.co.uk/",       // another scheme
		"https://example.co.uk/",           // the Domain itself
		"https://other.co.uk/",             // under the refused suffix
	} {
		assert.Empty(t, names(other), other)
	}
	jar.SetCookies(parse("ftp://shop.example.co.uk/"), []*http.Cookie{{Name: "f", Value: "1"}})
	assert.Empty(t, names("ftp://shop.example.co.uk/"), "no origin, no cookies")
}

// TestSiteCookieJarBounds: a site cannot make the jar keep more than
// MaxSiteCookies cookies, or one over MaxSiteCookieBytes; it can still
// replace and delete its own.
func TestSiteCookieJarBounds(t *testing.T) {
	jar := NewSiteCookieJar()
	u, err := url.Parse("https://shop.example/")
	require.NoError(t, err)
	var many []*http.Cookie
	for i := range MaxSiteCookies + 10 {
		many = append(many, &http.Cookie{Name: fmt.Sprintf("c%d", i), Value: "v", Path: "/"})
	}
	many = append(many, &http.Cookie{Name: "big", Value: strings.Repeat("x", MaxSiteCookieBytes), Path: "/"})
	jar.SetCookies(u, many)
	values := func() map[string]string {
		out := map[string]string{}
		for _, c := range jar.Cookies(u) {
			out[c.Name] = c.Value
		}
		return out
	}
	got := values()
	assert.Len(t, got, MaxSiteCookies)
	assert.NotContains(t, got, "big")
	assert.NotContains(t, got, fmt.Sprintf("c%d", MaxSiteCookies))

	jar.SetCookies(u, []*http.Cookie{{Name: "c0", Value: "new", Path: "/"}, {Name: "c1", Path: "/", MaxAge: -1}})
	jar.SetCookies(u, []*http.Cookie{{Name: "late", Value: "v", Path: "/"}})
	got = values()
	assert.Equal(t, "new", got["c0"], "replacing one's own cookie when full")
	assert.NotContains(t, got, "c1")
	assert.Contains(t, got, "late", "a deletion frees a place")
	assert.Len(t, got, MaxSiteCookies)
}
