package extbridge

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/fakeext"
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
	ln  *fakeext.Listener
}

func newEnv(t *testing.T, opts HubOptions) *env {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	h, err := NewHub(opts)
	require.NoError(t, err)
	ln := fakeext.NewListener()
	served := make(chan error, 1)
	go func() { served <- h.Serve(ln) }()
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	return &env{t: t, hub: h, ln: ln}
}

func (e *env) options(o fakeext.Options) fakeext.Options {
	o.URL = e.ln.URL()
	if o.Token == "" {
		o.Token = testToken
	}
	o.HTTPClient = e.ln.HTTPClient()
	return o
}

// dial connects an authenticated fake extension and consumes the mode frame
// that follows the ack.
func (e *env) dial(o fakeext.Options) *fakeext.Ext {
	e.t.Helper()
	ext, err := fakeext.Dial(e.t.Context(), e.options(o))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { ext.Close() })
	if o.OnFrame == nil && !o.Stalled {
		f, err := ext.Next(e.t.Context())
		require.NoError(e.t, err)
		require.Equal(e.t, "mode", f.Type)
	}
	return ext
}

// frameWait bounds the wait for an expected frame. Inside a synctest bubble
// the hub's pinger keeps the fake clock moving, so a frame that never comes
// would otherwise hang the test until the real test timeout.
const frameWait = time.Hour

// next returns the next frame, failing the test when there is none.
func next(t *testing.T, ext *fakeext.Ext) fakeext.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), frameWait)
	defer cancel()
	f, err := ext.Next(ctx)
	require.NoError(t, err)
	return f
}

func browserExt(b *fakeext.Browser) extOptions {
	return extOptions{OnCommand: b.Handle}
}

// extOptions adds builder helpers to fakeext.Options.
type extOptions fakeext.Options

func (o extOptions) withVersion(v string) fakeext.Options {
	o.Version = v
	return fakeext.Options(o)
}

// tcpEnv is a hub serving on a real loopback socket.
type tcpEnv struct {
	hub *Hub
	url string
}

func newTCPEnv(t testing.TB, opts HubOptions) *tcpEnv {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	h, err := NewHub(opts)
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

func (e *tcpEnv) dial(t testing.TB, o fakeext.Options) *fakeext.Ext {
	t.Helper()
	o.URL = e.url
	if o.Token == "" {
		o.Token = testToken
	}
	ext, err := fakeext.Dial(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { ext.Close() })
	return ext
}

// readInFlight starts a read command and returns once the extension has
// received it; the channel yields the command's error.
func readInFlight(t *testing.T, e *env, ext *fakeext.Ext) (<-chan error, fakeext.Command) {
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
