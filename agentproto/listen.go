package agentproto

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Errors of ListenUnix and of the client's peer check.
var (
	// ErrForeignSocket is returned by ListenUnix when the path holds a
	// socket owned by another user: it is never replaced.
	ErrForeignSocket = errors.New("agentproto: socket path is owned by another user")
	// ErrNotSocket is returned by ListenUnix when the path holds
	// something other than a socket: it is never replaced.
	ErrNotSocket = errors.New("agentproto: socket path exists and is not a socket")
	// ErrSocketInUse is returned by ListenUnix when a live server of the
	// same user keeps the path until ctx ends.
	ErrSocketInUse = errors.New("agentproto: socket path is in use by a live server")
	// ErrForeignPeer is returned by Dial (unless ClientOptions.InsecureSkipPeerCheck) when the
	// server runs as another user.
	ErrForeignPeer = errors.New("agentproto: the server runs as another user")
	// ErrPeerCredentials is returned by Dial (unless ClientOptions.InsecureSkipPeerCheck) when the
	// peer's credentials cannot be read.
	ErrPeerCredentials = errors.New("agentproto: cannot read the peer's credentials")
)

// ListenUnix listens on a Unix socket at path ("" means SocketPath())
// with the safety rules of this package:
//
//   - The socket is mode 0600 from the moment it exists at path: it is
//     created in a new private (0700) directory beside path, given mode
//     0600 there, and renamed into place, so no other user can ever
//     connect to it, whatever the umask.
//   - Something at path that is not a socket, or a socket owned by another
//     user, is never replaced (ErrNotSocket, ErrForeignSocket).
//   - A stale socket of the current user (nothing accepts on it) is
//     replaced. While a live server of the current user holds the path
//     (another host that is still shutting down), ListenUnix waits for it
//     to go away, until ctx ends (ErrSocketInUse).
//   - The listener's Close removes the socket file only if path still
//     holds the very file this call created (same device and inode), so
//     a successor's socket is never removed.
//
// The returned listener is a *net.UnixListener's Accept with that Close.
func ListenUnix(ctx context.Context, path string) (net.Listener, error) {
	if path == "" {
		path = SocketPath()
	}
	for {
		live, err := checkExisting(path)
		if err != nil {
			return nil, err
		}
		if !live {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s: %w", ErrSocketInUse, path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}

	dir, err := os.MkdirTemp(filepath.Dir(path), ".agentproto-")
	if err != nil {
		return nil, fmt.Errorf("agentproto: listen: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("agentproto: listen: %w", err)
	}
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		ul.Close()
		return nil, fmt.Errorf("agentproto: listen: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(tmp)
	if err != nil {
		return fail(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fail(errors.New("no inode information"))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &unixListener{UnixListener: ul, path: path, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// checkExisting looks at what path holds: nothing or a stale socket of
// ours (false, nil), a live socket of ours (true, nil), or something that
// must not be replaced (an error).
func checkExisting(path string) (live bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("agentproto: listen: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return false, fmt.Errorf("%w: %s", ErrNotSocket, path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return false, fmt.Errorf("%w: %s", ErrForeignSocket, path)
	}
	nc, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		nc.Close()
		return true, nil
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
		return false, nil // nobody listens: the file is stale (or gone)
	}
	return true, nil // a full backlog or a slow server: someone is there
}

type unixListener struct {
	*net.UnixListener
	path     string
	dev, ino uint64
	once     sync.Once
	err      error
}

// Close closes the listener and removes the socket file if it is still
// the one ListenUnix created. It is idempotent.
func (l *unixListener) Close() error {
	l.once.Do(func() {
		l.err = l.UnixListener.Close()
		fi, err := os.Lstat(l.path)
		if err != nil {
			return
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Dev) == l.dev && st.Ino == l.ino {
			os.Remove(l.path)
		}
	})
	return l.err
}
