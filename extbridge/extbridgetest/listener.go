package extbridgetest

import (
	"context"
	"net"
	"net/http"

	"github.com/agentbridge/agentbridge/internal/memnet"
)

// ListenerPort is the port a [Listener] reports: the hub's default.
const ListenerPort = 52789

// Listener is an in-memory [net.Listener] whose connections are [net.Pipe]
// pairs, for serving a hub without a socket
// ([github.com/agentbridge/agentbridge/extbridge.Hub.Serve] accepts it).
// Its connections report loopback TCP addresses (the server end
// 127.0.0.1:52789), as a hub serving on 127.0.0.1 would see. Created
// inside a [testing/synctest] bubble, reads, writes and deadlines on its
// connections block durably and follow the bubble's fake clock. Its
// methods are safe for concurrent use.
type Listener struct {
	l *memnet.Listener
}

// NewListener returns a [Listener] whose address is 127.0.0.1:52789.
func NewListener() *Listener {
	port := 40000 // the next client port, advanced under memnet's lock
	return &Listener{l: memnet.NewListener(&memnet.Options{
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ListenerPort},
		ClientAddr: func() net.Addr {
			port++
			return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		},
	})}
}

// Accept waits for the next connection made by [Dial].
func (l *Listener) Accept() (net.Conn, error) { return l.l.Accept() }

// Close makes Accept and [Dial] fail, including calls already waiting
// (with an error matching [net.ErrClosed]). It is idempotent. Connections already
// made are not closed.
func (l *Listener) Close() error { return l.l.Close() }

// Addr returns 127.0.0.1:52789.
func (l *Listener) Addr() net.Addr { return l.l.Addr() }

// URL returns the WebSocket URL of a hub served on the listener.
func (l *Listener) URL() string { return "ws://" + l.l.Addr().String() + "/ws" }

// Dial connects to the listener: it returns the client end of a new pipe
// once Accept has taken the server end.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) { return l.l.Dial(ctx) }

// HTTPClient returns a client whose connections all go to the listener,
// whatever the URL's host: pass it in [Options].HTTPClient.
func (l *Listener) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return l.Dial(ctx)
		},
		DisableKeepAlives: true,
	}}
}
