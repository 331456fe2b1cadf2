package mcptools

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxRequestBodyBytes is the largest HTTP request body [NewHTTPHandler]
// accepts when HTTPOptions.MaxRequestBodyBytes is zero.
const DefaultMaxRequestBodyBytes = 4 << 20

// DefaultEventStoreBytes is how many bytes of server-sent events
// [NewHTTPHandler]'s server keeps for clients to resume a stream from
// (Last-Event-ID), across all sessions, when HTTPOptions.MaxEventStoreBytes
// is zero: the oldest events are dropped first.
const DefaultEventStoreBytes = 10 << 20

// DefaultSessionTimeout is how long an HTTP session may stay idle before
// [NewHTTPHandler]'s server closes it, when HTTPOptions.SessionTimeout is
// zero.
const DefaultSessionTimeout = time.Hour

// HTTPOptions configures [NewHTTPHandler]. Nil means defaults.
type HTTPOptions struct {
	// AllowedOrigins are the browser origins accepted in an Origin header
	// (exact match, such as "chrome-extension://ID"). Default: none, every
	// request with an Origin header is refused, so no web page can reach the
	// server even with a token.
	AllowedOrigins []string
	// MaxRequestBodyBytes bounds a request body. Zero or negative means
	// DefaultMaxRequestBodyBytes: there is no unbounded body.
	MaxRequestBodyBytes int64
	// SessionTimeout closes a session that received no request for that
	// long, so abandoned sessions do not pile up. Zero or negative means
	// DefaultSessionTimeout: sessions always expire.
	SessionTimeout time.Duration
	// MaxEventStoreBytes bounds the server-sent events kept so that a
	// client whose stream broke can resume it with Last-Event-ID (the
	// go-sdk's MemoryEventStore; the oldest are dropped first). Zero or
	// negative means DefaultEventStoreBytes.
	MaxEventStoreBytes int
	// Logger receives refused requests (never tokens). Nil is silent.
	Logger *slog.Logger
}

// ErrNoToken is returned by [NewHTTPHandler] when its token is empty.
var ErrNoToken = errors.New("mcptools: an HTTP server needs a bearer token")

// NewHTTPHandler returns the streamable HTTP handler for server, guarded as the
// agent HTTP API is: requests must come from a loopback peer, name a loopback
// Host (a DNS-rebinding guard), carry no Origin other than an allowed one (so
// a web page cannot drive it) and carry token as a bearer token
// (Authorization: Bearer TOKEN, compared in constant time). An empty token
// is refused with [ErrNoToken]. Refusals are 401, 403 or 421 with a short text body.
// Served by [httpapi.NewServer], each request that passes the guard
// is marked with [httpapi.Authenticated], so that connections
// without the token are the ones that server bounds and closes.
//
// Behind the guard are two go-sdk handlers for server. Requests at protocol
// 2026-07-28 or later (their Mcp-Protocol-Version header says so, as that
// protocol requires of every request) go to a stateless one, since the SDK
// serves that sessionless protocol only there; the others go to a stateful
// one with sessions and resumable streams: a client whose event stream broke
// reconnects with Last-Event-ID and gets what it missed, from a store bounded
// by MaxEventStoreBytes. A request the SDK refuses with a plain-text 4xx
// (an unknown method, a request without its params, a notification it does
// not know, a malformed body, an unknown session) gets the same status with
// a JSON-RPC error instead, carrying the request's id when the body was one
// request: -32601 for an unknown method, -32602 for missing params, -32700
// for a body that is not JSON, -32600 otherwise.
//
// A request the client cancels (notifications/cancelled) gets no response,
// as MCP says: the stateful handler's stream for it ends without one, and
// at 2026-07-28 the client cancels by closing its request.
func NewHTTPHandler(server *mcp.Server, token string, opts *HTTPOptions) (http.Handler, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	if opts == nil {
		opts = &HTTPOptions{}
	}
	limit := opts.MaxRequestBodyBytes
	if limit <= 0 {
		limit = DefaultMaxRequestBodyBytes
	}
	idle := opts.SessionTimeout
	if idle <= 0 {
		idle = DefaultSessionTimeout
	}
	eventBytes := opts.MaxEventStoreBytes
	if eventBytes <= 0 {
		eventBytes = DefaultEventStoreBytes
	}
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventBytes)
	get := func(*http.Request) *mcp.Server { return server }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: limit, SessionTimeout: idle, Logger: opts.Logger, EventStore: events,
	})
	// Cancellation at 2026-07-28 is the client closing its request: it
	// cancels the tool call.
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: limit, Logger: opts.Logger, Stateless: true, PropagateRequestCancellation: true,
	})
	g := &httpGuard{stateful: stateful, stateless: stateless, cancels: &httpCancels{calls: map[sessionCall]bool{}}, limit: limit,
		token: []byte("Bearer " + token), origins: opts.AllowedOrigins, logger: opts.Logger}
	return g, nil
}

// firstSessionlessProtocol is the first MCP protocol version without
// sessions (SEP-2575), which the go-sdk serves on stateless handlers only.
const firstSessionlessProtocol = "2026-07-28"

type httpGuard struct {
	stateful  http.Handler
	stateless http.Handler
	cancels   *httpCancels // the stateful handler's calls in flight
	limit     int64
	token     []byte
	origins   []string
	logger    *slog.Logger
}

func (g *httpGuard) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if g.logger != nil {
		g.logger.Info("mcp http: refused", "status", status, "reason", msg, "remote", r.RemoteAddr)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentbridge-mcp"`)
	}
	http.Error(w, msg, status)
}

func (g *httpGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackAddr(r.RemoteAddr) {
		g.refuse(w, r, http.StatusForbidden, "loopback peers only")
		return
	}
	if !loopbackHost(r.Host) {
		g.refuse(w, r, http.StatusMisdirectedRequest, "Host must be a loopback name")
		return
	}
	if origin, ok := r.Header["Origin"]; ok {
		allowed := len(origin) == 1
		if allowed {
			allowed = false
			for _, o := range g.origins {
				if origin[0] == o {
					allowed = true
				}
			}
		}
		if !allowed {
			g.refuse(w, r, http.StatusForbidden, "browser origins are not allowed")
			return
		}
	}
	auth := r.Header.Values("Authorization")
	if len(auth) != 1 || subtle.ConstantTimeCompare([]byte(auth[0]), g.token) != 1 {
		g.refuse(w, r, http.StatusUnauthorized, "missing or invalid bearer token")
		return
	}
	// Served by httpapi.NewServer (as agentbridge-mcp --http is),
	// the connection no longer counts against its bound on connections
	// without a token while this request lasts.
	httpapi.Authenticated(r)
	body := readBody(w, r, g.limit)
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstSessionlessProtocol {
		serveJSONRPCErrors(g.stateless, w, r, body)
		return
	}
	w, done := g.cancels.track(w, r, body)
	defer done()
	serveJSONRPCErrors(g.stateful, w, r, body)
}

func loopbackAddr(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// loopbackHost reports whether a Host header names the loopback interface:
// localhost, 127.0.0.0/8 or ::1, with or without a port.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}
