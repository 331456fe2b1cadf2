package extbridge

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// noDeadlineListener's connections cannot have deadlines, as some
// in-memory transports cannot.
type noDeadlineListener struct{ net.Listener }

type noDeadlineConn struct{ net.Conn }

var errNoDeadline = errors.New("deadlines not supported")

func (l noDeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return noDeadlineConn{c}, nil
}

func (noDeadlineConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (noDeadlineConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (noDeadlineConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

// newEnvOn is newEnv with the hub serving on wrap(the in-memory listener).
func newEnvOn(t *testing.T, opts HubOptions, wrap func(net.Listener) net.Listener) *env {
	t.Helper()
	h, err := NewHub(testToken, &opts)
	require.NoError(t, err)
	ln := extbridgetest.NewListener()
	served := make(chan error, 1)
	go func() { served <- h.Serve(wrap(ln)) }()
	t.Cleanup(func() {
		assert.NoError(t, h.Close())
		assert.ErrorIs(t, <-served, ErrServerClosed)
	})
	return &env{t: t, hub: h, ln: ln}
}

// On a socket that cannot have a read deadline nothing could interrupt a
// caller waiting for bytes: a cancelled command must still return at once,
// so callers never read such a socket.
func TestCallerNeverReadsWithoutDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvOn(t, HubOptions{}, func(l net.Listener) net.Listener { return noDeadlineListener{l} })
		ext := e.dial(extbridgetest.Options{})
		c := e.hub.cur.Load()
		require.NotNil(t, c)
		errc, cmd := readInFlight(t, e, ext)
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "first"}))
		require.NoError(t, <-errc)
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		second := make(chan error, 1)
		go func() {
			_, err := e.hub.Read(ctx, "")
			second <- err
		}()
		_, err := ext.NextCommand(t.Context())
		require.NoError(t, err)
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case err := <-second:
			assert.ErrorIs(t, err, context.Canceled)
		default:
			t.Fatal("a cancelled command's caller is stuck reading a socket without deadlines")
		}
	})
}
