package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/mcp/mcptools"
	"github.com/agentbridge/agentbridge/webagents"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startPingSite serves a WebAgents site with one read action, ping, through
// wrap (nil: none), and returns its page URL with host (such as "127.0.0.1"
// or "localhost") as the host name.
func startPingSite(t *testing.T, host string, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	m, err := webagents.ParseManifest([]byte(`{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},
		"actions":{"ping":{"description":"Answers pong.","effect":"read","inputSchema":{"type":"object"}}}}`), nil)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil)
	origin := strings.Replace("http://"+srv.Listener.Addr().String(), "127.0.0.1", host, 1)
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"ping": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]any{"pong": true}, nil
		}),
	}, &webagents.HandlerOptions{Origin: origin})
	require.NoError(t, err)
	mux := http.NewServeMux()
	h.Register(mux)
	var next http.Handler = mux
	if wrap != nil {
		next = wrap(mux)
	}
	srv.Config.Handler = next
	srv.Start()
	t.Cleanup(srv.Close)
	return origin + "/"
}

// cookieLog records the Cookie headers a site receives.
type cookieLog struct {
	mu      sync.Mutex
	cookies []string
}

func (l *cookieLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.cookies = append(l.cookies, r.Header.Values("Cookie")...)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *cookieLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.cookies, "; ")
}

// TestSiteCookiesStayWithTheirOrigin: two sites on one host name at
// different ports (cookies ignore ports) each keep their own cookies: the
// session cookie one sets, with or without a Domain attribute, never reaches
// the other, and still comes back to its own site.
func TestSiteCookiesStayWithTheirOrigin(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			shopLog, hostileLog := &cookieLog{}, &cookieLog{}
			shop := startPingSite(t, host, func(next http.Handler) http.Handler {
				return shopLog.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.SetCookie(w, &http.Cookie{Name: "session", Value: "shop-secret", Path: "/", HttpOnly: true})
					http.SetCookie(w, &http.Cookie{Name: "wide", Value: "shop-domain-secret", Path: "/", Domain: host})
					next.ServeHTTP(w, r)
				}))
			})
			hostile := startPingSite(t, host, hostileLog.wrap)
			cs, stderr := startStdio(t, nil, nil, "--site", shop, "--site", hostile)
			for _, page := range []string{shop, hostile, shop, hostile} {
				res := call(t, cs, mcptools.ToolWebAgentsBatch, map[string]any{"site": page,
					"operations": []map[string]any{{"id": "p", "action": "ping"}}})
				require.False(t, res.IsError, "%s: %s\nstderr:\n%s", page, text(res), stderr)
			}
			assert.Contains(t, shopLog.all(), "session=shop-secret", "the shop's session lasts across calls")
			assert.NotContains(t, hostileLog.all(), "shop-secret", "the shop's cookies reached the other site")
			assert.NotContains(t, hostileLog.all(), "shop-domain-secret", "the shop's cookies reached the other site")
		})
	}
}

// TestSiteResponseHeaderLimits: the site client has the webagents client's
// own transport limits: a batch answered with 1 MiB of headers, or after
// thousands of 103 Early Hints, is refused with an error saying so.
func TestSiteResponseHeaderLimits(t *testing.T) {
	hostile := map[string]func(w http.ResponseWriter){
		"1 MiB of headers": func(w http.ResponseWriter) {
			w.Header().Set("X-Padding", strings.Repeat("a", 1<<20))
		},
		"5000 early hints": func(w http.ResponseWriter) {
			for range 5000 {
				w.Header().Set("Link", "</style.css>; rel=preload; as=style")
				w.WriteHeader(http.StatusEarlyHints)
			}
			w.Header().Del("Link")
		},
	}
	for name, answer := range hostile {
		t.Run(name, func(t *testing.T) {
			page := startPingSite(t, "127.0.0.1", func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						answer(w)
					}
					next.ServeHTTP(w, r)
				})
			})
			cs, _ := startStdio(t, nil, nil, "--site", page)
			res := call(t, cs, mcptools.ToolWebAgentsBatch, map[string]any{
				"operations": []map[string]any{{"id": "p", "action": "ping"}}})
			assert.True(t, res.IsError, text(res))
			assert.Contains(t, text(res), "response headers exceeded 65536 bytes")
		})
	}
}
