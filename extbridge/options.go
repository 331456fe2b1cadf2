package extbridge

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Defaults of [HubOptions]. A zero field means its default.
const (
	DefaultAddr                = "127.0.0.1:52789"
	DefaultHelloTimeout        = 5 * time.Second
	DefaultPingInterval        = 20 * time.Second
	DefaultLivenessTimeout     = 60 * time.Second
	DefaultWriteTimeout        = 10 * time.Second
	DefaultPreHelloReadLimit   = 64 << 10
	DefaultReadLimit           = 64 << 20
	DefaultSendQueue           = 256
	DefaultCommandTimeout      = 30 * time.Second
	DefaultReplyMargin         = 5 * time.Second
	DefaultToolApprovalTimeout = 5 * time.Minute
	DefaultMaxConcurrentTools  = 16
	DefaultIdleTimeout         = 30 * time.Second
	DefaultMaxUnauthConns      = 64
	DefaultReplaceLimit        = 3
	DefaultReplaceWindow       = 10 * time.Second
)

// ReplacePolicy says what happens when an extension authenticates while
// another connection is current.
type ReplacePolicy string

const (
	// ReplaceNewest lets the newcomer replace the current connection, as
	// the protocol says, damped against two browsers replacing each other
	// (see HubOptions.ReplaceLimit). The default ("").
	ReplaceNewest ReplacePolicy = ""
	// ReplaceKeepCurrent keeps the current connection and refuses
	// newcomers with 1008 "another browser is connected" until it ends.
	ReplaceKeepCurrent ReplacePolicy = "keep-current"
)

// defaultNavigateSchemes are the URL schemes Navigate accepts by default.
var defaultNavigateSchemes = []string{"http", "https", "file", "about", "data"}

// HubOptions configures a [Hub]. Every field is optional: its zero value is
// the documented default, and nil options mean every default. (The token,
// which a hub cannot do without, is [NewHub]'s parameter.)
type HubOptions struct {
	// Addr is the address ListenAndServe listens on. Default
	// "127.0.0.1:52789". Its host must be a loopback IP address or
	// "localhost".
	Addr string

	// HelloTimeout bounds the time between the WebSocket upgrade and the
	// extension's browser_hello. Default 5 s.
	HelloTimeout time.Duration

	// PingInterval is how often the hub pings the extension, which keeps an
	// MV3 service worker alive. Default 20 s.
	PingInterval time.Duration

	// LivenessTimeout is how long the extension may stay silent (no pong, no
	// frame) before the hub drops the connection. Default 60 s.
	LivenessTimeout time.Duration

	// WriteTimeout bounds each frame write. An extension that does not read
	// for that long is considered stalled and is disconnected. On the
	// server of Serve and ListenAndServe it also bounds each write of an
	// HTTP answer (artifacts, refusals), so that a client that never reads
	// cannot hold a connection. It also bounds the close handshake: the
	// socket is closed when the extension has not answered the close frame
	// within WriteTimeout. Default 10 s.
	WriteTimeout time.Duration

	// PreHelloReadLimit is the largest frame accepted before the hello.
	// Default 64 KiB.
	PreHelloReadLimit int64

	// ReadLimit is the largest frame accepted after the hello (screenshots
	// are megabytes of base64). Default 64 MiB.
	ReadLimit int64

	// SendQueue is the number of outbound frames queued per connection.
	// When it is full, senders wait (bounded by their context and by
	// WriteTimeout, after which a stalled extension is dropped). Default 256.
	SendQueue int

	// CommandTimeout is the timeout_ms sent with a browser command whose
	// context has no deadline. The hub then waits CommandTimeout+ReplyMargin
	// for the result. Default 30 s.
	CommandTimeout time.Duration

	// ReplyMargin is how much longer than the extension's own budget the hub
	// waits for a result when the caller's context has no deadline. Default
	// 5 s. (With a deadline, the deadline is binding for both sides.)
	ReplyMargin time.Duration

	// Replace selects what an authenticated newcomer does to the current
	// connection. Default [ReplaceNewest].
	Replace ReplacePolicy

	// ReplaceLimit and ReplaceWindow damp "newest wins": when more than
	// ReplaceLimit replacements happen within ReplaceWindow (the extension
	// in two browser profiles, each reconnecting when replaced), the hub
	// keeps the current connection and refuses newcomers with close 1008
	// "another browser is connected" for as long as it stays connected,
	// logged once with both extension versions; once it ends, the next
	// newcomer is accepted. Defaults 3 and 10 s.
	ReplaceLimit  int
	ReplaceWindow time.Duration

	// NavigateSchemes are the URL schemes Navigate accepts; a URL without
	// a scheme or with another one is refused before it is sent (the
	// extension would open a relative URL against its own page). Default
	// http, https, file, about, data. Add "chrome"
	// to allow chrome:// pages where the browser lets an extension open
	// them.
	NavigateSchemes []string

	// ExtensionIDs pins the extension ids whose Origin is accepted
	// (chrome-extension://ID, moz-extension://ID, safari-web-extension://ID).
	// Default: any id of those three schemes.
	ExtensionIDs []string

	// RequireOrigin refuses handshakes without an Origin header. Default
	// false: the protocol accepts a missing Origin, and the token is the
	// guard.
	RequireOrigin bool

	// IdleTimeout closes an HTTP keep-alive connection (artifacts, a
	// refused upgrade) idle for that long. Default 30 s.
	IdleTimeout time.Duration

	// MaxUnauthConns bounds the connections Serve and ListenAndServe
	// keep open that have not authenticated as the extension, whatever
	// their state: HTTP connections (new, answering a request, idle
	// between requests: artifacts, probes) and WebSockets before their
	// hello.
	// Beyond it, each new connection evicts the oldest idle one (or, when
	// none is idle, the oldest), so that local processes holding
	// connections cost bounded file descriptors and can never lock the
	// extension's reconnect out. Not applied when the [Hub] is mounted on a
	// server of the program's own (ServeHTTP). Default 64.
	MaxUnauthConns int

	// ProjectsDir holds one folder per project slug, each with its
	// artifacts in an "artifacts" folder, as the infer CLI keeps them
	// (~/.infer/projects/<slug>/artifacts/): GET
	// /artifacts/<slug>/<path> serves <ProjectsDir>/<slug>/artifacts/<path>
	// read-only, the route protocol-2 extensions rewrite image links onto.
	// A request whose first segment names no such folder falls back to
	// ArtifactsDir. Default "": no project artifacts. The directory must
	// exist when [NewHub] is called.
	ProjectsDir string

	// ArtifactsDir is served read-only at GET /artifacts/<path>. Default ""
	// means no artifacts route (404). The directory must exist when [NewHub]
	// is called.
	ArtifactsDir string

	// Backend answers the panel's frames. It is built before the hub and
	// never needs it: a panel message is answered through its [Reply].
	// Default: [BaseBackend], which answers empty lists and replies to no
	// message. (A hub that only drives the browser needs none, which is
	// why the Backend is an option and not a parameter of [NewHub].)
	Backend Backend

	// Tools serves the extension's tool_request frames. Default: none, every
	// tool is unknown (a failed result).
	Tools ToolHandler

	// ToolNeedsApproval is the approval gate of tool requests: when it
	// returns true for a request, the hub raises an approval_request first
	// (in protocol 2 a CUSTOM approval_request event whose tool_call_id is
	// the request's id, to the requesting connection only) and a rejection
	// becomes a failed result. Default: no request needs approval.
	ToolNeedsApproval func(ctx context.Context, req *ToolRequest) bool

	// ToolApprovalTimeout bounds the wait for a tool request's approval; an
	// unanswered request is rejected. Default 5 min.
	ToolApprovalTimeout time.Duration

	// MaxConcurrentTools bounds the tool requests run at once per
	// connection; beyond it a request gets a failed result at once.
	// Default 16.
	MaxConcurrentTools int

	// OnConnect is called when an extension has authenticated, and
	// OnDisconnect when that connection ends (replaced, lost, closed).
	// Calls are made one at a time, in order, from a goroutine of the hub,
	// so they may call the [Hub]'s methods, except Close and Shutdown, which
	// wait for that goroutine (call those from a goroutine of your own).
	// Default: none.
	OnConnect    func(ConnInfo)
	OnDisconnect func(ConnInfo, error)

	// Logger receives the hub's diagnostics. It never sees tokens or frame
	// payloads. Default: silent.
	Logger *slog.Logger
}

func (o *HubOptions) withDefaults() HubOptions {
	r := *o
	setDefault(&r.Addr, DefaultAddr)
	setDefault(&r.HelloTimeout, DefaultHelloTimeout)
	setDefault(&r.PingInterval, DefaultPingInterval)
	setDefault(&r.LivenessTimeout, DefaultLivenessTimeout)
	setDefault(&r.WriteTimeout, DefaultWriteTimeout)
	setDefault(&r.PreHelloReadLimit, DefaultPreHelloReadLimit)
	setDefault(&r.ReadLimit, DefaultReadLimit)
	setDefault(&r.SendQueue, DefaultSendQueue)
	setDefault(&r.CommandTimeout, DefaultCommandTimeout)
	setDefault(&r.ReplyMargin, DefaultReplyMargin)
	setDefault(&r.ToolApprovalTimeout, DefaultToolApprovalTimeout)
	setDefault(&r.MaxConcurrentTools, DefaultMaxConcurrentTools)
	setDefault(&r.IdleTimeout, DefaultIdleTimeout)
	setDefault(&r.ReplaceLimit, DefaultReplaceLimit)
	setDefault(&r.ReplaceWindow, DefaultReplaceWindow)
	setDefault(&r.MaxUnauthConns, DefaultMaxUnauthConns)
	if len(r.NavigateSchemes) == 0 {
		r.NavigateSchemes = defaultNavigateSchemes
	}
	r.NavigateSchemes = slices.Clone(r.NavigateSchemes)
	for i, s := range r.NavigateSchemes {
		r.NavigateSchemes[i] = strings.ToLower(s)
	}
	// The ack, the mode frame and a margin must always fit.
	r.SendQueue = max(r.SendQueue, 4)
	if r.Backend == nil {
		r.Backend = BaseBackend{}
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
