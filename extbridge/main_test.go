package extbridge

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testToken = "0123456789abcdef0123456789abcdef"

// env is a hub serving on an in-memory listener, for tests inside and
// outside synctest bubbles.
type env struct {
	t   *testing.T
	hub *Hub
	ln  *extbridgetest.Listener
}

func newEnv(t *testing.T, opts HubOptions) *env {
	t.Helper()
	return newEnvOn(t, opts, nil)
}

// newEnvOn is newEnv with the hub serving on wrap(the in-memory listener),
// or on the listener itself when wrap is nil.
func newEnvOn(t *testing.T, opts HubOptions, wrap func(net.Listener) net.Listener) *env {
	t.Helper()
	h, err := NewHub(testToken, &opts)
	require.NoError(t, err)
	ln := extbridgetest.NewListener()
	var l net.Listener = ln
	if wrap != nil {
		l = wrap(ln)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve(l) }()
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	return &env{t: t, hub: h, ln: ln}
}

// opts completes o for the env's in-memory listener.
func (e *env) opts(o extbridgetest.Options) *extbridgetest.Options {
	if o.Token == "" {
		o.Token = testToken
	}
	o.HTTPClient = e.ln.HTTPClient()
	return &o
}

// connect dials an authenticated fake extension; the mode frame that
// follows the ack is left in its queue.
func (e *env) connect(o extbridgetest.Options) (*extbridgetest.Extension, error) {
	return extbridgetest.Dial(e.t.Context(), e.ln.URL(), e.opts(o))
}

// dialRaw opens a WebSocket to the hub and says nothing.
func (e *env) dialRaw(o extbridgetest.Options) (*websocket.Conn, *http.Response, error) {
	return extbridgetest.DialRaw(e.t.Context(), e.ln.URL(), e.opts(o))
}

// dial connects an authenticated fake extension and consumes the mode frame
// that follows the ack.
func (e *env) dial(o extbridgetest.Options) *extbridgetest.Extension {
	e.t.Helper()
	ext, err := e.connect(o)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { ext.Close() })
	if o.OnFrame == nil && !o.Stalled {
		require.Equal(e.t, "mode", next(e.t, ext).Type)
	}
	return ext
}

// answer adapts a function to a BrowserHandler that ignores its context.
func answer(fn func(*extbridgetest.Command) *extbridgetest.Result) extbridgetest.BrowserHandler {
	return extbridgetest.BrowserHandlerFunc(func(_ context.Context, c *extbridgetest.Command) *extbridgetest.Result { return fn(c) })
}

// frameWait bounds the wait for an expected frame. Inside a synctest bubble
// the hub's pinger keeps the fake clock moving, so a frame that never comes
// would otherwise hang the test until the real test timeout.
const frameWait = time.Hour

// next returns the next frame, failing the test when there is none.
func next(t *testing.T, ext *extbridgetest.Extension) extbridgetest.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), frameWait)
	defer cancel()
	f, err := ext.Next(ctx)
	require.NoError(t, err)
	return f
}

// tcpEnv is a hub serving on a real loopback socket.
type tcpEnv struct {
	hub *Hub
	url string
}

func newTCPEnv(t testing.TB, opts HubOptions) *tcpEnv {
	t.Helper()
	h, err := NewHub(testToken, &opts)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- h.Serve(l) }()
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	return &tcpEnv{hub: h, url: "ws://" + l.Addr().String() + "/ws"}
}

func (e *tcpEnv) dial(t testing.TB, o extbridgetest.Options) *extbridgetest.Extension {
	t.Helper()
	if o.Token == "" {
		o.Token = testToken
	}
	ext, err := extbridgetest.Dial(context.Background(), e.url, &o)
	require.NoError(t, err)
	t.Cleanup(func() { ext.Close() })
	return ext
}

// readInFlight starts a read command and returns once the extension has
// received it; the channel yields the command's error.
func readInFlight(t *testing.T, e *env, ext *extbridgetest.Extension) (<-chan error, *extbridgetest.Command) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := e.hub.Read(t.Context(), "")
		errc <- err
	}()
	cmd, err := ext.NextCommand(t.Context())
	require.NoError(t, err)
	return errc, cmd
}
