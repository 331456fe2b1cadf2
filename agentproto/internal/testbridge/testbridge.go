// Package testbridge holds the bridges the tests of package agentproto and
// of its bridge, httpapi and tools packages start: only tests import it.
package testbridge

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/require"
)

// New starts a bridge in memory (agentprototest.NewBridge), closed when
// the test ends, and waits until its extension is online.
func New(t *testing.T, opts *agentprototest.BridgeOptions) *agentprototest.Bridge {
	t.Helper()
	b := agentprototest.NewBridge(opts)
	t.Cleanup(func() { b.Close() })
	require.NoError(t, b.WaitOnline(t.Context()))
	return b
}

// Strict is a bridge with neither a token nor unauthenticated use.
func Strict(t *testing.T) *agentprototest.Bridge {
	hostEnd, browserEnd := nativemsg.Pipe()
	ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{Handler: agentprototest.Echo})
	host := bridge.NewHost(hostEnd, nil)
	srv := bridge.NewServer(&bridge.ServerOptions{Extension: host})
	l := agentprototest.NewListener()
	var wg sync.WaitGroup
	wg.Go(func() { host.Run(context.Background()) })
	wg.Go(func() { srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		ext.Close()
		host.Close()
		wg.Wait()
	})
	return &agentprototest.Bridge{Server: srv, Host: host, Extension: ext, Listener: l}
}

// Recording starts a bridge whose extension records each request and
// answers with reply (or {"ok":true}).
func Recording(t *testing.T, reply func(r *agentprototest.Request) (any, error)) (*agentprototest.Bridge, func() []agentprototest.Request) {
	var mu sync.Mutex
	var got []agentprototest.Request
	b := New(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			mu.Lock()
			got = append(got, agentprototest.Request{Type: r.Type, Payload: append(json.RawMessage(nil), r.Payload...)})
			mu.Unlock()
			if reply != nil {
				return reply(r)
			}
			return map[string]bool{"ok": true}, nil
		})}})
	return b, func() []agentprototest.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]agentprototest.Request(nil), got...)
	}
}

// Bench is a bridge as it runs for real: agents on a Unix socket, the
// host's link to the extension on OS pipes (as Chrome's stdio), the stand-in
// extension answering in its reading goroutine.
type Bench struct {
	*agentprototest.Bridge
	path  string
	serve sync.WaitGroup
}

func StartBench(tb testing.TB, handler agentprototest.Handler) *Bench {
	hostEnd, browserEnd, err := nativemsg.OSPipe()
	if err != nil {
		tb.Fatal(err)
	}
	bb := &Bench{path: filepath.Join(tb.TempDir(), "bridge.sock")}
	bb.Bridge = agentprototest.NewBridgeOn(hostEnd, browserEnd, &agentprototest.BridgeOptions{
		Server:    bridge.ServerOptions{Token: "bench-token"},
		Extension: agentprototest.Options{Handler: handler, Serial: true},
	})
	l, err := bridge.ListenUnix(context.Background(), bb.path)
	if err != nil {
		tb.Fatal(err)
	}
	bb.serve.Go(func() { bb.Server.Serve(l) })
	if err := bb.WaitOnline(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return bb
}

func (bb *Bench) Stop() {
	bb.Close()
	bb.serve.Wait()
}

func (bb *Bench) DialAgent(tb testing.TB) *agentproto.Client {
	c, err := agentproto.Dial(context.Background(), bb.path, &agentproto.ClientOptions{Token: "bench-token"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// ErrorString is an error whose message is the string.
type ErrorString string

func (e ErrorString) Error() string { return string(e) }
