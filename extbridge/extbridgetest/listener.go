package extbridgetest

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// ListenerPort is the port a Listener reports: the hub's default.
const ListenerPort = 52789

// Listener is an in-memory net.Listener whose connections are net.Pipe
// pairs, for serving a hub without a socket (Hub.Serve accepts it). Its
// connections report loopback TCP addresses (the server end
// 127.0.0.1:52789), as a hub serving on 127.0.0.1 would see. Created inside
// a testing/synctest bubble, reads, writes and deadlines on its connections
// block durably and follow the bubble's fake clock.
type Listener struct {
	addr   *net.TCPAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex
	port   int // the next client port
}

// NewListener returns a Listener whose address is 127.0.0.1:52789.
func NewListener() *Listener {
	return &Listener{
		addr:   &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ListenerPort},
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

// Close makes Accept and Dial fail. It is idempotent. Connections already
// made are not closed.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr returns 127.0.0.1:52789.
func (l *Listener) Addr() net.Addr { return l.addr }

// URL returns the WebSocket URL of a hub served on the listener.
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
		return nil, &net.OpError{Op: "dial", Net: "pipe", Addr: l.addr, Err: net.ErrClosed}
	case <-ctx.Done():
		c.Close()
		s.Close()
		return nil, ctx.Err()
	}
}

// HTTPClient returns a client whose connections all go to the listener,
// whatever the URL's host: pass it in Options.HTTPClient.
func (l *Listener) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return l.Dial(ctx)
		},
		DisableKeepAlives: true,
	}}
}

// addrConn is a pipe end reporting TCP addresses.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }
