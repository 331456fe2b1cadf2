package extbridge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ConnInfo describes an authenticated extension connection.
type ConnInfo struct {
	Version     string    // extension_version from the hello (at most 64 bytes, printable)
	Origin      string    // the Origin header, "" when absent
	RemoteAddr  string    // the peer's address
	ConnectedAt time.Time // when the hello was accepted
	// ProtocolVersion is the dialect the connection speaks:
	// [ProtocolClassic] or [Protocol2], chosen from the hello's
	// protocol_version (see [MaxProtocolVersion]).
	ProtocolVersion ProtocolVersion
	// Client is the hello's client ("extension", "desktop", "browser"; ""
	// when absent), at most 64 printable bytes.
	Client string
}

// Hub is the WebSocket hub a CLI embeds for the browser extension. It is an
// http.Handler serving /ws and /artifacts/, and can serve itself with
// ListenAndServe or Serve.
//
// At most one authenticated extension connection is current; a newly
// authenticated one replaces it. All methods are safe for concurrent use.
type Hub struct {
	opts      HubOptions
	tokenHash [sha256.Size]byte
	log       *slog.Logger
	artifacts *os.Root // nil when no ArtifactsDir
	projects  *os.Root // nil when no ProjectsDir
	unauth    *unauthConns
	srv       *http.Server
	port      atomic.Int32 // for the not-connected wording

	cur atomic.Pointer[extConn] // the current authenticated connection

	mu          sync.Mutex
	closed      bool        // Close or Shutdown began: no new connections or calls
	closedFlag  atomic.Bool // closed, for hot paths that take no lock
	conns       map[*extConn]struct{}
	connected   chan struct{} // closed while a connection is current
	calls       map[string]*pendingCall
	callTimer   callTimer // fails the calls whose wait ran out
	approvals   map[string]*pendingApproval
	approvalSeq []string // pending approval ids in request order
	turns       map[*Turn]struct{}
	lastThread  string // the conversation the panel last followed (thread)
	listeners   []net.Listener
	// Replacement damping (admitReplacementLocked).
	replacements []time.Time // recent replacements, within ReplaceWindow
	storm        *extConn    // the connection kept through a reconnect storm, until it ends
	flapLogged   bool        // the current refusal episode was logged
	events       []func()    // OnConnect/OnDisconnect calls not yet made
	eventsActive bool

	wg     sync.WaitGroup     // every goroutine the hub started, and active handlers
	ctx    context.Context    // the hub's lifetime, done once Close has begun: reply turns run in it
	cancel context.CancelFunc // ends ctx, in Close
	once   sync.Once
}

// NewToken returns a new random token: 16 bytes from crypto/rand, hex
// encoded (32 characters).
func NewToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24 and later)
	return hex.EncodeToString(b[:])
}

// minTokenLength is the shortest token [NewHub] accepts.
const minTokenLength = 16

// NewHub returns a [Hub] that admits the extension presenting token in its
// browser_hello, configured by opts (nil means every default). token is
// the shared secret the user copies into the extension's options; it must
// be at least 16 bytes ([ErrWeakToken]), and [NewToken] makes a suitable
// one. NewHub also fails when a limit in opts is negative, when Addr is not
// a loopback address, or when ArtifactsDir or ProjectsDir cannot be
// opened. NewHub starts no goroutine; the Hub must be closed with Close or
// Shutdown once it has served.
func NewHub(token string, opts *HubOptions) (*Hub, error) {
	if len(token) < minTokenLength {
		return nil, ErrWeakToken
	}
	if opts == nil {
		opts = &HubOptions{}
	}
	if opts.HelloTimeout < 0 || opts.PingInterval < 0 || opts.LivenessTimeout < 0 ||
		opts.WriteTimeout < 0 || opts.CommandTimeout < 0 || opts.ReplyMargin < 0 ||
		opts.ToolApprovalTimeout < 0 || opts.PreHelloReadLimit < 0 || opts.ReadLimit < 0 ||
		opts.SendQueue < 0 || opts.MaxConcurrentTools < 0 || opts.IdleTimeout < 0 || opts.MaxUnauthConns < 0 ||
		opts.ReplaceLimit < 0 || opts.ReplaceWindow < 0 {
		return nil, errors.New("extbridge: negative duration or limit in HubOptions")
	}
	o := opts.withDefaults()
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("extbridge: address %q: %w", o.Addr, err)
	}
	if !isLoopbackHost(host) {
		return nil, fmt.Errorf("extbridge: address %q is not a loopback address", o.Addr)
	}
	if o.Replace != ReplaceNewest && o.Replace != ReplaceKeepCurrent {
		return nil, fmt.Errorf("extbridge: unknown replace policy %q", o.Replace)
	}
	for _, id := range o.ExtensionIDs {
		if !validExtensionID(id) {
			return nil, fmt.Errorf("extbridge: invalid extension id %q", truncate(id, 64))
		}
	}
	h := &Hub{
		opts:      o,
		tokenHash: sha256.Sum256([]byte(token)),
		log:       o.Logger,
		conns:     map[*extConn]struct{}{},
		connected: make(chan struct{}),
		calls:     map[string]*pendingCall{},
		approvals: map[string]*pendingApproval{},
		turns:     map[*Turn]struct{}{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if p, err := strconv.Atoi(port); err == nil {
		h.port.Store(int32(p))
	}
	if o.ArtifactsDir != "" {
		root, err := os.OpenRoot(o.ArtifactsDir)
		if err != nil {
			return nil, fmt.Errorf("extbridge: artifacts directory: %w", err)
		}
		h.artifacts = root
	}
	if o.ProjectsDir != "" {
		root, err := os.OpenRoot(o.ProjectsDir)
		if err != nil {
			if h.artifacts != nil {
				h.artifacts.Close()
			}
			return nil, fmt.Errorf("extbridge: projects directory: %w", err)
		}
		h.projects = root
	}
	h.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(h.log.Handler(), slog.LevelDebug),
	}
	h.unauth = newUnauthConns(o.MaxUnauthConns, o.WriteTimeout, h.log)
	h.unauth.Install(h.srv)
	return h, nil
}

// ServeHTTP routes /ws to the extension's WebSocket and /artifacts/ to the
// artifacts directory; every other path is 404. Both routes refuse requests
// from non-loopback peers and requests whose Host is not a loopback name
// (DNS rebinding).
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Mounted on a program's own server, the hub learns its port from the
	// requests, for the not-connected wording.
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && a.Port != 0 && int(h.port.Load()) != a.Port {
		h.port.Store(int32(a.Port))
	}
	switch {
	case r.URL.Path == "/ws":
		h.serveWebSocket(w, r)
	case strings.HasPrefix(r.URL.Path, "/artifacts/"):
		h.serveArtifact(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Listen binds [HubOptions.Addr] and returns the listener for [Hub.Serve]. The
// bind error (address in use, …) is returned here, and Addr is valid as
// soon as Listen returns, so that a program can print the address or fail
// before it starts serving in another goroutine:
//
//	l, err := hub.Listen()
//	if err != nil {
//		return err
//	}
//	go hub.Serve(l)
//
// The listener belongs to the hub: Close and Shutdown close it, whether or
// not Serve was called.
func (h *Hub) Listen() (net.Listener, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, ErrServerClosed
	}
	l, err := net.Listen("tcp", h.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("extbridge: %w", err)
	}
	if err := h.register(l); err != nil {
		return nil, err
	}
	return l, nil
}

// ListenAndServe listens on HubOptions.Addr and serves the hub until
// Shutdown or Close, after which it returns [ErrServerClosed]. Use [Hub.Listen]
// and [Hub.Serve] to learn the bound address or the bind error before serving.
func (h *Hub) ListenAndServe() error {
	l, err := h.Listen()
	if err != nil {
		return err
	}
	return h.Serve(l)
}

// Serve serves the hub on l until Shutdown or Close, after which it returns
// [ErrServerClosed]. l must be a loopback TCP listener (or a listener whose
// address is not TCP, such as an in-memory one). Serve takes ownership of l
// and closes it.
func (h *Hub) Serve(l net.Listener) error {
	if err := h.register(l); err != nil {
		return err
	}
	err := h.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return ErrServerClosed
	}
	return err
}

// register checks that l is loopback and records it (once), for Addr and
// for Close. It closes l when it refuses it.
func (h *Hub) register(l net.Listener) error {
	if tcp, ok := l.Addr().(*net.TCPAddr); ok {
		if !tcp.IP.IsLoopback() {
			l.Close()
			return fmt.Errorf("extbridge: refusing to serve on non-loopback address %s", tcp)
		}
		h.port.Store(int32(tcp.Port))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		l.Close()
		return ErrServerClosed
	}
	if !slices.Contains(h.listeners, l) {
		h.listeners = append(h.listeners, l)
	}
	return nil
}

// Addr returns the address of the first listener the hub serves on, or nil
// before Listen, Serve or ListenAndServe. With Addr "127.0.0.1:0" it
// tells the port the system chose.
func (h *Hub) Addr() net.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.listeners) == 0 {
		return nil
	}
	return h.listeners[0].Addr()
}

// Connected reports whether an authenticated extension is connected.
func (h *Hub) Connected() bool { return h.cur.Load() != nil }

// Extension returns the current connection's description, and false when
// no extension is connected.
func (h *Hub) Extension() (ConnInfo, bool) {
	c := h.cur.Load()
	if c == nil {
		return ConnInfo{}, false
	}
	return c.info, true
}

// WaitConnected blocks until an authenticated extension is connected, ctx
// is done, or the hub is closed ([ErrClosed]).
func (h *Hub) WaitConnected(ctx context.Context) error {
	for {
		h.mu.Lock()
		ch, closed := h.connected, h.closed
		h.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-ch:
			if h.Connected() {
				return nil
			}
		case <-h.ctx.Done(): // Close
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Shutdown stops the hub gracefully, as [http.Server.Shutdown] lets active
// requests finish: it stops accepting connections, panel messages (their
// [Reply.StartTurn] returns [ErrClosed]) and calls made outside a running
// turn (ErrClosed), fails the pending approvals and questions with
// ErrClosed, and waits for the in-flight browser commands and tool
// requests and for the running turns ([Reply.StartTurn], [Hub.RunTurn]).
//
// A turn running when Shutdown begins finishes as it would have, for as
// long as its extension stays connected: the calls it makes with its
// context (or one derived from it) go through, its events ([Turn.Emit],
// Say, Echo, [Hub.Emit]) and its browser commands ([Hub.Command] and the
// others), and its closing RUN_FINISHED or RUN_ERROR reaches the panel, in
// either dialect. Its approvals and questions ([Turn.RequestApproval],
// [Turn.RequestInput]) fail at once with ErrClosed: they wait for a
// person, whom a shutdown's deadline should not wait for, and failing
// them lets the turn end with its RUN_ERROR while the panel is still
// there to show it.
//
// Once nothing runs, Shutdown closes the extension connection with 1001
// (going away), after the frames queued before, and waits for every
// goroutine. When ctx ends first it closes the hub as Close does
// (cancelling the running turns and waiting for the reply turns) and
// returns ctx's error. Serve then returns [ErrServerClosed]. A turn that
// calls Shutdown waits for itself: Shutdown then returns when ctx ends.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.beginClose()
	err := h.srv.Shutdown(ctx)
	if err == nil {
		err = h.waitIdle(ctx)
	}
	if err != nil {
		h.Close()
		return err
	}
	h.terminateAll(false)
	waited := make(chan struct{})
	go func() { h.wg.Wait(); close(waited) }()
	select {
	case <-waited:
		h.Close()
		return nil
	case <-ctx.Done():
		h.Close()
		<-waited
		return ctx.Err()
	}
}

// waitIdle waits until no turn runs and no browser command or tool request
// is in flight.
func (h *Hub) waitIdle(ctx context.Context) error {
	pause := time.Millisecond
	for {
		h.mu.Lock()
		busy := len(h.calls) + len(h.turns)
		for c := range h.conns {
			busy += c.activeTools()
		}
		h.mu.Unlock()
		if busy == 0 {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// drainingForLocked reports whether a call with context ctx is made by a
// running turn while Shutdown waits for it: such calls go on (h.mu held).
func (h *Hub) drainingForLocked(ctx context.Context) bool {
	t, _ := ctx.Value(turnKey{}).(*Turn)
	if t == nil {
		return false
	}
	select {
	case <-h.ctx.Done(): // Close
		return false
	default:
	}
	_, running := h.turns[t]
	return running
}

func (h *Hub) drainingFor(ctx context.Context) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.drainingForLocked(ctx)
}

// Close stops the hub at once: listeners and connections are closed,
// pending commands and approvals fail with [ErrClosed], the context of the
// running turns ([Reply.StartTurn], [Hub.RunTurn]) is cancelled, and Close
// waits for every goroutine the hub started, the reply turns included.
// Close is idempotent.
func (h *Hub) Close() error {
	h.beginClose()
	var err error
	h.once.Do(func() {
		h.cancel()      // the hub's lifetime: the reply turns, and what waits on Close
		h.cancelTurns() // and those of RunTurn
		err = h.srv.Close()
		// A listener from Listen that Serve never took.
		h.mu.Lock()
		for _, l := range h.listeners {
			l.Close()
		}
		h.mu.Unlock()
		h.terminateAll(true)
		h.mu.Lock()
		if h.callTimer.t != nil {
			h.callTimer.t.Stop() // every call has failed: nothing to expire
		}
		h.mu.Unlock()
		h.wg.Wait()
		if h.artifacts != nil {
			h.artifacts.Close()
		}
		if h.projects != nil {
			h.projects.Close()
		}
	})
	return err
}

// terminateAll ends every connection, authenticated or not, with 1001;
// hard closes the sockets at once.
func (h *Hub) terminateAll(hard bool) {
	h.mu.Lock()
	conns := make([]*extConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.terminate(ErrClosed, closeGoingAway, hard)
	}
}

// beginClose refuses new connections, calls and approvals, and fails the
// pending approvals.
func (h *Hub) beginClose() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.closedFlag.Store(true)
	approvals := h.approvals
	h.approvals = map[string]*pendingApproval{}
	h.approvalSeq = nil
	h.mu.Unlock()
	for _, a := range approvals {
		a.finish(approvalOutcome{err: ErrClosed})
	}
}

// notify queues a callback and makes sure one goroutine runs the queue in
// order. Called with h.mu held.
func (h *Hub) notifyLocked(fn func()) {
	h.events = append(h.events, fn)
	if h.eventsActive {
		return
	}
	h.eventsActive = true
	h.wg.Add(1)
	go h.runEvents()
}

func (h *Hub) runEvents() {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		if len(h.events) == 0 {
			h.eventsActive = false
			h.mu.Unlock()
			return
		}
		fn := h.events[0]
		h.events[0] = nil
		h.events = h.events[1:]
		h.mu.Unlock()
		fn()
	}
}

// setThread records the conversation the panel follows, the default
// thread of protocol-2 requests raised outside a turn.
func (h *Hub) setThread(id string) {
	h.mu.Lock()
	h.lastThread = id
	h.mu.Unlock()
}

func (h *Hub) thread() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastThread
}

func (h *Hub) notConnected() error {
	return &NotConnectedError{Port: int(h.port.Load())}
}

// isLoopbackHost reports whether host (without port) names the loopback
// interface: a loopback IP literal or "localhost".
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

// loopbackRequest reports whether r comes from a loopback peer and names a
// loopback host, so that neither a remote peer nor a web page reaching the
// port through DNS rebinding is served.
func loopbackRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return false
	}
	reqHost := r.Host
	if h, _, err := net.SplitHostPort(reqHost); err == nil {
		reqHost = h
	}
	return isLoopbackHost(reqHost)
}
