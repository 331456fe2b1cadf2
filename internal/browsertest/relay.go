package browsertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// RelayEnv is the environment variable that tells the relay host which
// Unix socket to dial.
const RelayEnv = "AGENTBRIDGE_RELAY_SOCKET"

// RelayHostPackage is the relay host's import path, for BuildBinary. The
// relay host is a native messaging host that dials the Unix socket named
// by RelayEnv and copies bytes both ways between it and its standard
// streams, so that a test speaks the native messaging port's frames to the
// real extension itself. It closes the socket's writing side when its
// standard input ends (the extension dropped the port) and exits.
const RelayHostPackage = "github.com/agentbridge/agentbridge/internal/browsertest/relayhost"

// RunRelay is the relay host's work: it dials the Unix socket at path and
// copies bytes both ways between it and the standard streams until either
// side ends. When standard input ends (the extension dropped the port) it
// closes the socket's writing side, so the other end reads EOF.
func RunRelay(path string) error {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(conn, os.Stdin)
		conn.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(os.Stdout, conn)
		done <- struct{}{}
	}()
	<-done
	return conn.Close()
}

// Relay is the listening end of relay hosts' connections.
type Relay struct {
	// Path is the Unix socket's path.
	Path string

	ln        *net.UnixListener
	dir       string
	closeOnce sync.Once
	closeErr  error
}

// ListenRelay listens on a Unix socket in a new temporary folder (short,
// to stay within the socket path limit).
func ListenRelay() (*Relay, error) {
	dir, err := os.MkdirTemp("", "relay-*")
	if err != nil {
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	path := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	return &Relay{Path: path, ln: ln, dir: dir}, nil
}

// Env returns the "KEY=value" setting for Options.Env that points relay
// hosts at r.
func (r *Relay) Env() string { return RelayEnv + "=" + r.Path }

// Accept waits for the next relay host to connect, or for ctx to end.
// Call it from one goroutine at a time.
func (r *Relay) Accept(ctx context.Context) (*RelayConn, error) {
	if err := r.ln.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		r.ln.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired // so that it cannot touch the next Accept's deadline
		}
	}()
	c, err := r.ln.AcceptUnix()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("browsertest: %w", err)
	}
	return &RelayConn{
		Conn: nativemsg.NewConn(c, c, c, nil),
		Pid:  peerPid(c),
		sock: c,
	}, nil
}

// Close stops listening and removes the socket and its folder. It is
// idempotent.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.closeErr = r.ln.Close()
		os.RemoveAll(r.dir)
	})
	return r.closeErr
}

// RelayConn is one relay host's connection: the host's end of the
// extension's native messaging port. Read the frames the extension sends
// and write frames to it with the embedded Conn, whose limits are a
// host's (read 64 MiB, write 1 MiB). Closing it makes the relay host exit,
// which the extension sees as a dropped port.
type RelayConn struct {
	*nativemsg.Conn
	// Pid is the relay host's process id, from the socket's peer
	// credentials; 0 where the system does not tell.
	Pid int

	sock *net.UnixConn
}

// SetReadDeadline sets the deadline for reading frames.
func (c *RelayConn) SetReadDeadline(t time.Time) error { return c.sock.SetReadDeadline(t) }
