// Package memnet is an in-memory [net.Listener] whose connections are
// [net.Pipe] pairs: servers that take a listener (agentproto's Server,
// extbridge's Hub, net/http) can be served and dialed in tests without a
// socket or the file system.
//
// The exported test packages agentproto/agentprototest and
// extbridge/extbridgetest wrap it; it is internal so that its API can
// follow theirs.
//
// A Listener created inside a [testing/synctest] bubble, and connections
// dialed inside it, block durably: Accept, Dial and reads and writes on the
// pipes let [testing/synctest.Wait] return, and deadlines on the
// connections follow the bubble's fake clock. All of a Listener's methods
// are safe for concurrent use.
package memnet

import (
	"context"
	"net"
	"sync"
)

// Addr is a placeholder address: network "memnet", the given string.
type Addr string

// Network returns "memnet".
func (Addr) Network() string { return "memnet" }

// String returns the address itself.
func (a Addr) String() string { return string(a) }

// Options configures a [Listener]. nil means the defaults.
type Options struct {
	// Addr is the listener's address, which is also the LocalAddr of the
	// connections Accept returns and the RemoteAddr of those Dial
	// returns. nil means Addr("memnet").
	Addr net.Addr
	// ClientAddr gives the address of each new connection's dialing end:
	// the RemoteAddr of the connection Accept returns and the LocalAddr of
	// the one Dial returns. The Listener calls it once per Dial, never
	// concurrently. nil means the listener's address.
	ClientAddr func() net.Addr
}

// Listener is an in-memory [net.Listener]: [Listener.Dial] makes a
// [net.Pipe] pair and hands one end to [Listener.Accept].
type Listener struct {
	addr       net.Addr
	clientAddr func() net.Addr

	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex // serializes clientAddr
}

// NewListener returns an open Listener. opts may be nil.
func NewListener(opts *Options) *Listener {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Addr == nil {
		o.Addr = Addr("memnet")
	}
	return &Listener{
		addr:       o.Addr,
		clientAddr: o.ClientAddr,
		conns:      make(chan net.Conn),
		closed:     make(chan struct{}),
	}
}

// Accept waits for the next connection made by Dial. After Close it
// returns an error that matches [net.ErrClosed].
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed}
	}
}

// Dial connects to the listener: it returns the client end of a new pipe
// once Accept has taken the other end. It fails with an error matching
// [net.ErrClosed] when the listener is closed, or with ctx's error when
// ctx ends first; the pipe is closed then.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) {
	// Checked first: the select below picks at random among ready cases,
	// and a waiting Accept must not win over an ended context.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	client := l.addr
	if l.clientAddr != nil {
		l.mu.Lock()
		client = l.clientAddr()
		l.mu.Unlock()
	}
	c, s := net.Pipe()
	select {
	case l.conns <- &conn{Conn: s, local: l.addr, remote: client}:
		return &conn{Conn: c, local: client, remote: l.addr}, nil
	case <-l.closed:
		c.Close()
		s.Close()
		return nil, &net.OpError{Op: "dial", Net: l.addr.Network(), Addr: l.addr, Err: net.ErrClosed}
	case <-ctx.Done():
		c.Close()
		s.Close()
		return nil, ctx.Err()
	}
}

// Close makes Accept and Dial fail, including calls already waiting. It
// is idempotent. Connections already made stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.addr }

// conn is a pipe end reporting the listener's addresses.
type conn struct {
	net.Conn
	local, remote net.Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }
