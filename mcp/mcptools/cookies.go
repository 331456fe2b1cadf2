package mcptools

import (
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Bounds of a [NewSiteCookieJar] jar, RFC 6265's minimums for a browser
// (section 6.1): a site can make it keep no more than this.
const (
	// MaxSiteCookies is the number of cookies kept per origin; a new one
	// beyond it is dropped (a site replacing or deleting its own is not).
	MaxSiteCookies = 50
	// MaxSiteCookieBytes bounds a cookie's name and value; a longer one is
	// dropped.
	MaxSiteCookieBytes = 4096
)

// NewSiteCookieJar returns the cookie jar of the site tools' default client
// (see [DiscoverSitesOptions].Client): one net/http/cookiejar jar per origin
// (scheme, host and port), each with the public suffix list, never shared.
//
// Cookies ignore ports, and a cookie's Domain attribute widens it to every
// host under a registrable domain, so one jar for several sites sends one
// site's session to the others: to another port of the same host, or to a
// sibling subdomain. Here a site's cookies only ever go back to its own
// origin, and the public suffix list keeps each jar to RFC 6265's rules
// (no cookie for a public suffix such as co.uk or github.io). A site gets at
// most [MaxSiteCookies] cookies of at most [MaxSiteCookieBytes]. The jar is
// safe for concurrent use; it holds one jar per origin requested, which for
// the site tools are the configured sites (discovery and the endpoint never
// leave a site's origin).
func NewSiteCookieJar() http.CookieJar {
	return &originJar{jars: map[string]*siteJar{}}
}

type originJar struct {
	mu   sync.Mutex
	jars map[string]*siteJar
}

// siteJar is one origin's jar and the cookies it was given, by name, domain
// and path (what makes a cookie replace another), so that their number can
// be bounded: cookiejar keeps every one.
type siteJar struct {
	jar  *cookiejar.Jar
	kept map[string]bool
}

// jar returns the jar of u's origin, nil for a URL without one.
func (j *originJar) jar(u *url.URL) *siteJar {
	origin := originKey(u)
	if origin == "" {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	sj := j.jars[origin]
	if sj == nil {
		// cookiejar.New never fails.
		jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
		sj = &siteJar{jar: jar, kept: map[string]bool{}}
		j.jars[origin] = sj
	}
	return sj
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
	sj := j.jar(u)
	if sj == nil {
		return
	}
	j.mu.Lock()
	allowed := make([]*http.Cookie, 0, len(cookies))
	for _, c := range cookies {
		if len(c.Name)+len(c.Value) > MaxSiteCookieBytes {
			continue
		}
		id := c.Name + "\x00" + strings.ToLower(strings.TrimPrefix(c.Domain, ".")) + "\x00" + c.Path
		switch {
		case c.MaxAge < 0 || (!c.Expires.IsZero() && c.Expires.Before(time.Now())):
			delete(sj.kept, id) // a deletion
		case !sj.kept[id] && len(sj.kept) >= MaxSiteCookies:
			continue
		default:
			sj.kept[id] = true
		}
		allowed = append(allowed, c)
	}
	j.mu.Unlock()
	sj.jar.SetCookies(u, allowed)
}

func (j *originJar) Cookies(u *url.URL) []*http.Cookie {
	if sj := j.jar(u); sj != nil {
		return sj.jar.Cookies(u)
	}
	return nil
}
