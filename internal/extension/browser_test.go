package extension_test

// The real-browser tests: one headless Chromium per test binary runs the
// extension with both sides on. Chromium starts the relay host, through
// which the tests speak the native messaging port's bridge:* frames
// themselves, and the service worker dials a fake hub served here. The
// tests share that browser and run one after the other.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/extension"
)

// testMain is goleak's view of the test binary: the shared browser is
// closed after the tests and before the leak check.
type testMain struct{ m *testing.M }

func (tm testMain) Run() int {
	code := tm.m.Run()
	if err := closeFixture(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the shared browser:", err)
		code = 1
	}
	if err := browsertest.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testMain{m})
}

const hubToken = "3f6c1f1e0d6b4a9c8e2f5a7b9c1d3e5f"

// fixture is the shared browser and its peers.
type fixture struct {
	browser *browsertest.Browser
	relay   *browsertest.Relay
	hub     *fakeHub
	cfg     extension.Config
	pages   *http.Server
	pagesLn net.Listener
	site    *site

	mu    sync.Mutex
	link  *link // the current relay host's connection
	pids  []int // every relay host pid seen
	hosts chan *link
}

var (
	fixtureOnce sync.Once
	shared      *fixture
	fixtureErr  error
)

// getFixture starts the shared browser on first use. Without Chromium
// the test is skipped (failed in CI).
func getFixture(t testing.TB) *fixture {
	t.Helper()
	browsertest.SkipWithoutChromium(t)
	fixtureOnce.Do(func() {
		shared, fixtureErr = startFixture(t)
	})
	require.NoError(t, fixtureErr, "starting the shared browser")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Chromium's output (last 64 KiB):\n%s", shared.browser.Output())
		}
	})
	return shared
}

func startFixture(t testing.TB) (fx *fixture, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host, err := browsertest.BuildBinary(ctx, browsertest.RelayHostPackage)
	if err != nil {
		return nil, err
	}
	fx = &fixture{hosts: make(chan *link, 4)}
	defer func() {
		if err != nil {
			fx.close()
		}
	}()
	if fx.relay, err = browsertest.ListenRelay(); err != nil {
		return nil, err
	}
	if fx.hub, err = startFakeHub("127.0.0.1:0"); err != nil {
		return nil, err
	}
	fx.site = newSite()
	if fx.pagesLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	fx.pages = &http.Server{Handler: fx.site}
	go fx.pages.Serve(fx.pagesLn)

	fx.cfg = extension.Config{
		HubPort:              fx.hub.port(),
		HubToken:             hubToken,
		HubBackoffMin:        100 * time.Millisecond,
		HubBackoffMax:        400 * time.Millisecond,
		HubPingInterval:      250 * time.Millisecond,
		Approvals:            extension.ApprovalApprove,
		NativeReconnectDelay: 200 * time.Millisecond,
		WakeInterval:         time.Second,
		Log:                  os.Getenv("BROWSERTEST_VERBOSE") != "",
	}
	var out io.Writer
	if fx.cfg.Log {
		out = os.Stderr
	}
	fx.browser, err = browsertest.Launch(ctx, &browsertest.Options{
		HostPath:  host,
		Env:       []string{fx.relay.Env()},
		Extension: fx.cfg,
		Output:    out,
		DevTools:  true,
	})
	if err != nil {
		return nil, err
	}
	go fx.acceptHosts()
	return fx, nil
}

// acceptHosts hands every relay host connection, hello checked, to
// fx.hosts. It ends when the relay listener closes.
func (fx *fixture) acceptHosts() {
	defer close(fx.hosts)
	for {
		c, err := fx.relay.Accept(context.Background())
		if err != nil {
			return
		}
		l := newLink(c)
		fx.mu.Lock()
		fx.pids = append(fx.pids, c.Pid)
		fx.mu.Unlock()
		fx.hosts <- l
	}
}

// native returns the current relay host's connection, waiting for one to
// come up when there is none (or the last one ended).
func (fx *fixture) native(t testing.TB) *link {
	t.Helper()
	fx.mu.Lock()
	l := fx.link
	fx.mu.Unlock()
	if l != nil && !l.ended() {
		return l
	}
	return fx.nextHost(t)
}

// nextHost waits for a new relay host to connect.
func (fx *fixture) nextHost(t testing.TB) *link {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	select {
	case l, ok := <-fx.hosts:
		require.True(t, ok, "the relay listener closed")
		require.Equal(t, `{"kind":"bridge:hello"}`, string(l.hello), "the first frame is the hello")
		fx.mu.Lock()
		fx.link = l
		fx.mu.Unlock()
		return l
	case <-ctx.Done():
		require.FailNow(t, "no native host connected within 30 s")
		return nil
	}
}

func closeFixture() error {
	if shared == nil {
		return nil
	}
	return shared.close()
}

// close stops the browser first, then checks that no process of its
// survived, relay hosts included, then stops the peers.
func (fx *fixture) close() error {
	var errs []error
	if fx.browser != nil {
		pids := append([]int{fx.browser.Pid()}, fx.browser.Processes()...)
		errs = append(errs, fx.browser.Close())
		fx.mu.Lock()
		pids = append(pids, fx.pids...)
		fx.mu.Unlock()
		for _, p := range pids {
			if browsertest.ProcessAlive(p) {
				errs = append(errs, fmt.Errorf("process %d survived the browser", p))
			}
		}
	}
	if fx.relay != nil {
		errs = append(errs, fx.relay.Close())
		for l := range fx.hosts {
			l.close()
		}
	}
	fx.mu.Lock()
	if fx.link != nil {
		fx.link.close()
	}
	fx.mu.Unlock()
	if fx.hub != nil {
		fx.hub.close()
	}
	if fx.pages != nil {
		fx.pages.Close()
	}
	return errors.Join(errs...)
}

// link is the test's side of one relay host connection: it sends
// bridge:request frames and sorts what the extension sends.
type link struct {
	conn  *browsertest.RelayConn
	hello json.RawMessage

	seq     atomic.Int64
	mu      sync.Mutex
	pending map[string]chan bridgeResponse
	events  chan json.RawMessage
	done    chan struct{}
	readErr error
}

type bridgeResponse struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
	raw    json.RawMessage
}

func newLink(c *browsertest.RelayConn) *link {
	l := &link{
		conn:    c,
		pending: make(map[string]chan bridgeResponse),
		events:  make(chan json.RawMessage, 4096),
		done:    make(chan struct{}),
	}
	// The hello comes first; read it here so a test sees it.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var hello json.RawMessage
	if err := c.Decode(&hello); err != nil {
		l.readErr = err
		close(l.done)
		return l
	}
	c.SetReadDeadline(time.Time{})
	l.hello = hello
	go l.read()
	return l
}

func (l *link) read() {
	defer close(l.done)
	for {
		var raw json.RawMessage
		if err := l.conn.Decode(&raw); err != nil {
			l.readErr = err
			return
		}
		var head struct {
			Kind  string          `json:"kind"`
			Event json.RawMessage `json:"event"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		switch head.Kind {
		case "bridge:response":
			var r bridgeResponse
			if json.Unmarshal(raw, &r) != nil {
				continue
			}
			r.raw = raw
			l.mu.Lock()
			ch := l.pending[r.ID]
			delete(l.pending, r.ID)
			l.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		case "bridge:event":
			select {
			case l.events <- head.Event:
			default: // a test that does not drain events does not care
			}
		}
	}
}

func (l *link) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *link) close() {
	l.conn.Close()
	<-l.done
}

// send writes one bridge:request and returns the channel its response
// arrives on.
func (l *link) send(t testing.TB, typ string, payload any) (string, <-chan bridgeResponse) {
	t.Helper()
	id := "req-" + strconv.FormatInt(l.seq.Add(1), 10)
	ch := make(chan bridgeResponse, 1)
	l.mu.Lock()
	l.pending[id] = ch
	l.mu.Unlock()
	frame := map[string]any{"kind": "bridge:request", "id": id, "type": typ}
	if payload != nil {
		frame["payload"] = payload
	}
	require.NoError(t, l.conn.Encode(frame))
	return id, ch
}

// wait returns the response on ch, failing the test after 30 s.
func (l *link) wait(t testing.TB, ch <-chan bridgeResponse) bridgeResponse {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-l.done:
		require.FailNow(t, "the native port closed", "%v", l.readErr)
	case <-timer.C:
		require.FailNow(t, "no response within 30 s")
	}
	return bridgeResponse{}
}

// call sends a request and returns its response.
func (l *link) call(t testing.TB, typ string, payload any) bridgeResponse {
	t.Helper()
	_, ch := l.send(t, typ, payload)
	return l.wait(t, ch)
}

// result calls and decodes a successful response's result into v.
func (l *link) result(t testing.TB, typ string, payload any, v any) {
	t.Helper()
	r := l.call(t, typ, payload)
	require.Nil(t, r.Error, "%s failed: %s", typ, r.raw)
	require.NoError(t, json.Unmarshal(r.Result, v), "%s", r.raw)
}

// drainEvents discards the events received so far.
func (l *link) drainEvents() {
	for {
		select {
		case <-l.events:
		default:
			return
		}
	}
}

// takeEvents returns the events already received, without waiting.
func (l *link) takeEvents() []json.RawMessage {
	var out []json.RawMessage
	for {
		select {
		case e := <-l.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// fakeHub plays the CLI's hub for the extension bridge side.
type fakeHub struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup

	refuse atomic.Int32 // how many next hellos to refuse

	mu      sync.Mutex
	conns   []*hubConn
	changed chan struct{} // closed and replaced when a connection is added
}

// hubConn is one authenticated extension connection.
type hubConn struct {
	ws     *websocket.Conn
	origin string
	hello  map[string]any
	frames chan json.RawMessage // everything but pings
	pings  chan struct{}
	done   chan struct{}
}

func startFakeHub(addr string) (*fakeHub, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &fakeHub{ln: ln, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", h.serveWS)
	h.srv = &http.Server{Handler: mux}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.srv.Serve(ln)
	}()
	return h, nil
}

func (h *fakeHub) port() int { return h.ln.Addr().(*net.TCPAddr).Port }

func (h *fakeHub) serveWS(w http.ResponseWriter, r *http.Request) {
	h.wg.Add(1)
	defer h.wg.Done()
	origin := r.Header.Get("Origin")
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{extension.ID}})
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	_, data, err := ws.Read(ctx)
	cancel()
	if err != nil {
		return
	}
	var hello map[string]any
	if json.Unmarshal(data, &hello) != nil || hello["type"] != "browser_hello" || hello["token"] != hubToken {
		ws.Close(websocket.StatusPolicyViolation, "bad hello")
		return
	}
	if h.refuse.Load() > 0 {
		h.refuse.Add(-1)
		ws.Close(websocket.StatusPolicyViolation, "refused by the test")
		return
	}
	if err := ws.Write(r.Context(), websocket.MessageText, []byte(`{"type":"browser_hello_ack"}`)); err != nil {
		return
	}
	c := &hubConn{
		ws:     ws,
		origin: origin,
		hello:  hello,
		frames: make(chan json.RawMessage, 1024),
		pings:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	defer close(c.done)
	h.mu.Lock()
	h.conns = append(h.conns, c)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	for {
		_, data, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &head) == nil && head.Type == "ping" {
			select {
			case c.pings <- struct{}{}:
			default:
			}
			continue
		}
		select {
		case c.frames <- data:
		default:
		}
	}
}

// next returns the first connection after the n-th one (n = how many
// connections the caller has seen), waiting up to 30 s.
func (h *fakeHub) next(t testing.TB, n int) *hubConn {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if len(h.conns) > n {
			c := h.conns[len(h.conns)-1]
			h.mu.Unlock()
			return c
		}
		changed := h.changed
		h.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			require.FailNow(t, "the extension did not connect to the hub within 30 s")
		}
	}
}

// count returns how many connections were accepted.
func (h *fakeHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// current returns the newest connection, waiting for one if it has ended.
func (h *fakeHub) current(t testing.TB) *hubConn {
	t.Helper()
	h.mu.Lock()
	n := len(h.conns)
	var c *hubConn
	if n > 0 {
		c = h.conns[n-1]
	}
	h.mu.Unlock()
	if c != nil {
		select {
		case <-c.done:
		default:
			return c
		}
	}
	return h.next(t, n)
}

func (h *fakeHub) close() {
	h.srv.Close()
	h.mu.Lock()
	for _, c := range h.conns {
		c.ws.CloseNow()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// send writes one frame to the extension.
func (c *hubConn) send(t testing.TB, frame any) {
	t.Helper()
	data, err := json.Marshal(frame)
	require.NoError(t, err)
	c.sendRaw(t, websocket.MessageText, data)
}

func (c *hubConn) sendRaw(t testing.TB, typ websocket.MessageType, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.ws.Write(ctx, typ, data))
}

// frame returns the next frame from the extension other than a ping.
func (c *hubConn) frame(t testing.TB) map[string]any {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case data := <-c.frames:
		var f map[string]any
		require.NoError(t, json.Unmarshal(data, &f), "%s", data)
		return f
	case <-c.done:
		require.FailNow(t, "the extension's connection closed")
	case <-timer.C:
		require.FailNow(t, "no frame from the extension within 30 s")
	}
	return nil
}

// command sends a browser_command and returns its browser_result.
func (c *hubConn) command(t testing.TB, fields map[string]any) map[string]any {
	t.Helper()
	id := fmt.Sprintf("cmd-%d", time.Now().UnixNano())
	frame := map[string]any{"type": "browser_command", "id": id, "timeout_ms": 30000}
	for k, v := range fields {
		frame[k] = v
	}
	c.send(t, frame)
	f := c.frame(t)
	require.Equal(t, "browser_result", f["type"], "%v", f)
	require.Equal(t, id, f["id"])
	return f
}
