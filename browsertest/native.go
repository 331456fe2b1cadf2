package browsertest

import (
	"context"
	"fmt"
	"os"

	"github.com/agentbridge/agentbridge/extension"
	ibt "github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// init makes a test binary that imports the kit its own native host:
// when Chromium starts it as the host of a Browser whose native port goes
// to the test (the relay's socket in the environment, the extension's
// origin as its argument), it relays the port to that socket and exits
// before any test runs. Started any other way it does nothing.
func init() {
	path := os.Getenv(ibt.RelayEnv)
	if path == "" || len(os.Args) < 2 || os.Args[1] != extension.NativeOrigin {
		return
	}
	if err := ibt.RunRelay(path); err != nil {
		fmt.Fprintln(os.Stderr, "browsertest: native host relay:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// NativePort is the host's end of the extension's native messaging port,
// held by the test: read the frames the extension sends and write frames
// to it with the embedded Conn, whose limits are a host's (read 64 MiB,
// write 1 MiB, as Chrome enforces). Give it to bridge.NewHost to run
// an agent protocol host in the test, or speak the frames yourself.
// Closing it drops the port, which the extension sees as its host exiting
// (it starts a new one after extension.Options.NativeReconnectDelay).
type NativePort struct {
	*nativemsg.Conn
	// Pid is the relay process Chromium started for this port, from the
	// socket's peer credentials; 0 where the system does not tell.
	Pid int
}

// AcceptNative waits until the extension opens its native port (at start,
// and again after each drop) and returns the host's end of it, or an
// error when ctx ends. The extension's first frame, its
// {"kind":"bridge:hello"}, is left for the caller to read. It returns
// [ErrNoNativePort] when the browser runs an [Options.Host] or the
// extension's native side is off. Call it from one goroutine at a time;
// the ports it returns are closed with the browser if not before.
func (b *Browser) AcceptNative(ctx context.Context) (*NativePort, error) {
	if b.relay == nil {
		return nil, ErrNoNativePort
	}
	c, err := b.relay.Accept(ctx)
	if err != nil {
		return nil, err
	}
	p := &NativePort{Conn: c.Conn, Pid: c.Pid}
	b.mu.Lock()
	b.ports = append(b.ports, p)
	b.mu.Unlock()
	return p, nil
}
