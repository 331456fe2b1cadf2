package mcptools

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/publicsuffix"
)

// NewSiteCookieJar returns the cookie jar of the site tools' default client
// (see [SiteToolsOptions].Client): one net/http/cookiejar jar per origin
// (scheme, host and port), each with the public suffix list, never shared.
//
// Cookies ignore ports, and a cookie's Domain attribute widens it to every
// host under a registrable domain, so one jar for several sites sends one
// site's session to the others: to another port of the same host, or to a
// sibling subdomain. Here a site's cookies only ever go back to its own
// origin, and the public suffix list keeps each jar to RFC 6265's rules
// (no cookie for a public suffix such as co.uk or github.io). The jar is
// safe for concurrent use; it holds one jar per origin requested, which for
// the site tools are the configured sites (discovery and the endpoint never
// leave a site's origin).
func NewSiteCookieJar() http.CookieJar {
	return &originJar{jars: map[string]*cookiejar.Jar{}}
}

type originJar struct {
	mu   sync.Mutex
	jars map[string]*cookiejar.Jar
}

// jar returns the jar of u's origin, nil for a URL without one.
func (j *originJar) jar(u *url.URL) *cookiejar.Jar {
	origin := originKey(u)
	if origin == "" {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	jar := j.jars[origin]
	if jar == nil {
		// cookiejar.New never fails.
		jar, _ = cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
		j.jars[origin] = jar
	}
	return jar
}

// originKey is u's origin as a map key: the scheme and host in lower case and
// the port, the scheme's default when u names none.
func originKey(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" || (scheme != "http" && scheme != "https") {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func (j *originJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if jar := j.jar(u); jar != nil {
		jar.SetCookies(u, cookies)
	}
}

func (j *originJar) Cookies(u *url.URL) []*http.Cookie {
	if jar := j.jar(u); jar != nil {
		return jar.Cookies(u)
	}
	return nil
}
