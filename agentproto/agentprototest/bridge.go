package agentprototest

import (
	"context"
	"net"
	"sync"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/internal/memnet"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Listener is an in-memory [net.Listener]: [Listener.Dial] returns one end
// of a [net.Pipe] and [Listener.Accept] the other. It needs no file system
// and works inside [testing/synctest] bubbles. Its address, and both ends' addresses, are
// network "memnet", "agentprototest". Its methods are safe for concurrent
// use.
type Listener struct {
	l *memnet.Listener
}

// NewListener returns an open in-memory listener.
func NewListener() *Listener {
	return &Listener{l: memnet.NewListener(&memnet.Options{Addr: memnet.Addr("agentprototest")})}
}

// Accept waits for the next Dial. After Close it returns an error matching
// [net.ErrClosed].
func (l *Listener) Accept() (net.Conn, error) { return l.l.Accept() }

// Dial connects to the listener. It fails with an error matching
// [net.ErrClosed] once the listener is closed, or with ctx's error.
func (l *Listener) Dial(ctx context.Context) (net.Conn, error) { return l.l.Dial(ctx) }

// Close stops Accept and Dial. It is idempotent. Connections already made
// stay open.
func (l *Listener) Close() error { return l.l.Close() }

// Addr returns the placeholder address "agentprototest".
func (l *Listener) Addr() net.Addr { return l.l.Addr() }

// BridgeOptions configures a [Bridge]. Nil means the defaults.
type BridgeOptions struct {
	// Server configures the server; its Extension is the [Bridge]'s Host.
	// The zero value allows unauthenticated requests unless Token is set.
	Server bridge.ServerOptions
	// Host configures the host.
	Host bridge.HostOptions
	// Extension configures the stand-in extension. A nil [Handler] there
	// means [Echo] unless Manual is set.
	Extension Options
	// Manual leaves requests to the test (Extension.Requests()).
	Manual bool
}

// Bridge is a whole bridge in memory, for tests and examples: a Server on
// an in-memory [Listener], a Host joined to it, and a stand-in [Extension] at
// the browser end of the Host's native messaging pipe.
type Bridge struct {
	Server    *bridge.Server
	Host      *bridge.Host
	Extension *Extension
	Listener  *Listener

	wg sync.WaitGroup
}

// NewBridge starts a [Bridge] whose host and extension talk over an
// in-memory pipe ([nativemsg.Pipe]). Close stops it.
func NewBridge(opts *BridgeOptions) *Bridge {
	hostEnd, browserEnd := nativemsg.Pipe()
	return NewBridgeOn(hostEnd, browserEnd, opts)
}

// NewBridgeOn starts a [Bridge] whose host and extension talk over the given
// native messaging connection, such as [nativemsg.OSPipe]'s (the link's real
// costs, as in a browser). Close stops it and closes both ends.
func NewBridgeOn(hostEnd, browserEnd *nativemsg.Conn, opts *BridgeOptions) *Bridge {
	var o BridgeOptions
	if opts != nil {
		o = *opts
	}
	if o.Server.Token == "" {
		o.Server.AllowUnauthenticated = true
	}
	if o.Extension.Handler == nil && !o.Manual {
		o.Extension.Handler = Echo
	}
	b := &Bridge{Listener: NewListener()}
	b.Host = bridge.NewHost(hostEnd, &o.Host)
	o.Server.Extension = b.Host
	b.Server = bridge.NewServer(&o.Server)
	b.Extension = NewExtension(browserEnd, &o.Extension)
	b.wg.Go(func() { b.Host.Run(context.Background()) })
	b.wg.Go(func() { b.Server.Serve(b.Listener) })
	return b
}

// Dial returns a Client connected to the bridge. opts may be nil.
func (b *Bridge) Dial(ctx context.Context, opts *agentproto.ClientOptions) (*agentproto.Client, error) {
	nc, err := b.Listener.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return agentproto.NewClient(nc, opts), nil
}

// WaitOnline waits until the host has seen the extension's hello (see
// [bridge.Host.WaitOnline]).
func (b *Bridge) WaitOnline(ctx context.Context) error {
	return b.Host.WaitOnline(ctx)
}

// Close stops everything and waits for every goroutine. Clients dialed
// from the bridge see their connection closed; close them too.
func (b *Bridge) Close() error {
	b.Server.Close()
	b.Extension.Close()
	b.Host.Close()
	b.wg.Wait()
	return nil
}
