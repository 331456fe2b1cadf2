package fakeext

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Listener is an in-memory net.Listener whose connections are net.Pipe
// pairs. Inside a testing/synctest bubble (create it there) reads, writes
// and deadlines on its connections block durably and use the bubble's fake
// clock, which real sockets do not. Its connections report loopback TCP
// addresses, as a hub serving on 127.0.0.1 would see.
type Listener struct {
	addr   *net.TCPAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	port   int // next client port
}

// NewListener returns a Listener whose address is 127.0.0.1:52789.
func NewListener() *Listener {
	return &Listener{
		addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 52789},
		conns:  make(chan net.Conn),
		closed: make(chan struct{}),
		port:   40000,
	}
}

// Accept waits for the next connection made by Dial.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and Dial fail. It is idempotent.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr returns 127.0.0.1:52789.
func (l *Listener) Addr() net.Addr { return l.addr }

// URL returns the hub's WebSocket URL on this listener.
func (l *Listener) URL() string { return "ws://" + l.addr.String() + "/ws" }

// Dial connects to the listener: it returns the client end of a new pipe
// once Accept has taken the server end.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) {
	l.mu.Lock()
	l.port++
	client := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: l.port}
	l.mu.Unlock()
	c, s := net.Pipe()
	server := &addrConn{Conn: s, local: l.addr, remote: client}
	select {
	case l.conns <- server:
		return &addrConn{Conn: c, local: client, remote: l.addr}, nil
	case <-l.closed:
		c.Close()
		s.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		c.Close()
		s.Close()
		return nil, ctx.Err()
	}
}

// HTTPClient returns a client whose connections all go to the listener,
// whatever the URL's host. Pass it in Options.HTTPClient.
func (l *Listener) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return l.Dial(ctx)
		},
		DisableKeepAlives: true,
	}}
}

type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }
