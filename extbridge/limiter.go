package extbridge

import (
	"io"
	"net"
	"net/http"
	"sync"
)

// unauthConns tracks the connections accepted by Serve that have not
// authenticated as the extension: HTTP keep-alive connections, artifact
// requests, and WebSockets before their hello. At most max are open at
// once. A connection accepted beyond that evicts one (see oldestLocked),
// so that connections held by other local processes can never lock the
// extension out: its reconnect is always the newest connection, and it
// authenticates within milliseconds.
type unauthConns struct {
	max int

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	seq   uint64
}

// trackedConn is a connection accepted by the hub's listener.
type trackedConn struct {
	net.Conn
	set   *unauthConns
	seq   uint64         // accept order
	state http.ConnState // guarded by set.mu
}

func (c *trackedConn) Close() error {
	c.set.forget(c)
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close before closing, as it does on a bare
// TCP connection, so that a final response is not lost to a reset.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile path for artifacts.
func (c *trackedConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(c.Conn, r)
}

// limitListener wraps the listener given to Serve.
type limitListener struct {
	net.Listener
	set *unauthConns
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.set.admit(c), nil
}

func newUnauthConns(max int) *unauthConns {
	return &unauthConns{max: max, conns: map[*trackedConn]struct{}{}}
}

// admit tracks c, evicting a connection when the set is full.
func (s *unauthConns) admit(c net.Conn) *trackedConn {
	tc := &trackedConn{Conn: c, set: s, state: http.StateNew}
	var victim *trackedConn
	s.mu.Lock()
	s.seq++
	tc.seq = s.seq
	if len(s.conns) >= s.max {
		victim = s.oldestLocked()
		delete(s.conns, victim)
	}
	s.conns[tc] = struct{}{}
	s.mu.Unlock()
	if victim != nil {
		victim.Conn.Close()
	}
	return tc
}

// oldestLocked picks the connection to evict: the oldest HTTP connection
// idle between requests, else the oldest of the others (connections that
// have sent nothing yet, HTTP requests, WebSockets waiting for their hello)
// by accept order, whatever their state. The extension's reconnect goes
// through every state in the milliseconds before its hello: ranking a
// state below another would let a local process that keeps opening
// WebSockets evict it with one connection during that window, while in
// accept order it takes MaxUnauthConns newer connections.
func (s *unauthConns) oldestLocked() *trackedConn {
	var best *trackedConn
	for c := range s.conns {
		if best == nil || evictRank(c.state) < evictRank(best.state) ||
			(evictRank(c.state) == evictRank(best.state) && c.seq < best.seq) {
			best = c
		}
	}
	return best
}

// evictRank orders connection states for eviction, lowest first.
func evictRank(state http.ConnState) int {
	if state == http.StateIdle {
		return 0
	}
	return 1
}

// connState is the http.Server's ConnState hook.
func (s *unauthConns) connState(c net.Conn, state http.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	if state == http.StateClosed {
		s.forget(tc)
		return
	}
	s.mu.Lock()
	tc.state = state
	s.mu.Unlock()
}

// forget stops tracking c: it closed, or it authenticated as the extension
// (which is then bounded by being the one current connection).
func (s *unauthConns) forget(c *trackedConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// len returns the number of tracked connections.
func (s *unauthConns) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
