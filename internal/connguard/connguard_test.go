package connguard

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pipe(t *testing.T) net.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a
}

func tracked(g *Guard, nc net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.conns[nc]
	return ok
}

func TestEvictionOrder(t *testing.T) {
	g := New(Options{MaxUnauth: 3})
	ws := pipe(t)
	g.admit(ws)
	g.connState(ws, http.StateHijacked)
	active := pipe(t)
	g.admit(active)
	g.connState(active, http.StateActive)
	idle := pipe(t)
	g.admit(idle)
	g.connState(idle, http.StateIdle)
	// Full: the idle one goes first, although it is the newest.
	g.admit(pipe(t))
	assert.False(t, tracked(g, idle))
	// Then the others in accept order, whatever their state: the pending
	// WebSocket, then the active request.
	g.admit(pipe(t))
	assert.False(t, tracked(g, ws))
	g.admit(pipe(t))
	assert.False(t, tracked(g, active))
	assert.Equal(t, 3, g.Unauthenticated())
}

// A connection serving an authenticated request does not count and is
// never evicted; once the request ends it counts again, and the bound
// applies to it like to any idle connection.
func TestAuthenticatedRequestsAreNotCounted(t *testing.T) {
	g := New(Options{MaxUnauth: 2})
	agent := pipe(t)
	e := g.admit(agent)
	g.connState(agent, http.StateActive)
	r, err := http.NewRequestWithContext(t.Context(), "GET", "/", nil)
	require.NoError(t, err)
	Authenticate(r.WithContext(contextWith(r, e)))
	for range 10 {
		nc := pipe(t)
		g.admit(nc)
		g.connState(nc, http.StateActive)
	}
	assert.True(t, tracked(g, agent), "the authenticated connection stays")
	assert.Equal(t, 2, g.Unauthenticated())
	g.connState(agent, http.StateIdle)
	assert.False(t, tracked(g, agent), "idle again, it is the first to go")
	assert.Equal(t, 2, g.Unauthenticated())
}

// TestExtensionHandshakeSurvivesAWebSocketFlood: a local process keeps
// opening WebSockets and never says hello. The extension's reconnect,
// accepted among them, is still in its HTTP upgrade (or has sent nothing
// yet) when the next one arrives. Ranking pending WebSockets after HTTP
// requests made that next connection evict the extension's: with one
// attacker connection per millisecond, half the reconnects failed, and all
// of them with eight. In accept order it survives every arrival but the
// MaxUnauth-th after it.
func TestExtensionHandshakeSurvivesAWebSocketFlood(t *testing.T) {
	const limit = 8
	g := New(Options{MaxUnauth: limit})
	flood := func() {
		nc := pipe(t)
		g.admit(nc)
		g.connState(nc, http.StateActive)
		g.connState(nc, http.StateHijacked)
	}
	for range 2 * limit {
		flood()
	}
	for _, state := range []http.ConnState{http.StateNew, http.StateActive, http.StateHijacked} {
		ext := pipe(t)
		e := g.admit(ext)
		if state != http.StateNew {
			g.connState(ext, state)
		}
		for range limit - 1 {
			flood()
			require.True(t, tracked(g, ext), "the extension's connection (%v) is evicted by a newer one", state)
		}
		g.AuthenticateConn(&Conn{Conn: ext, e: e}) // its hello
	}
}

func contextWith(r *http.Request, e *entry) context.Context {
	return context.WithValue(r.Context(), entryKey{}, e)
}
