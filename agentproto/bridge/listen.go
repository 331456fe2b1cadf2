package bridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
)

// Errors of ListenUnix.
var (
	// ErrForeignSocket is returned by ListenUnix when the path holds a
	// socket owned by another user: it is never replaced.
	ErrForeignSocket = errors.New("bridge: socket path is owned by another user")
	// ErrNotSocket is returned by ListenUnix when the path holds
	// something other than a socket: it is never replaced.
	ErrNotSocket = errors.New("bridge: socket path exists and is not a socket")
	// ErrSocketInUse is returned by ListenUnix when a live server of the
	// same user keeps the path until ctx ends.
	ErrSocketInUse = errors.New("bridge: socket path is in use by a live server")
)

// ListenUnix listens on a Unix socket at path ("" means
// [agentproto.PlatformSocketPath](); the environment is not read)
// with the safety rules of this package:
//
//   - Only the current user can ever connect: the socket is created in a
//     new private directory beside path (mode 0700 on Unix; on Windows a
//     protected DACL granting the current user alone), given mode 0600
//     (Windows: the same user-only DACL) there, and renamed into place, so
//     no other user can reach it at any moment, whatever the umask or
//     inherited ACLs.
//   - Something at path that is not a socket, or a socket owned by another
//     user (uid on Unix, owner SID on Windows), is never replaced
//     (ErrNotSocket, ErrForeignSocket).
//   - A stale socket of the current user (nothing accepts on it) is
//     replaced. While a live server of the current user holds the path
//     (another host that is still shutting down), ListenUnix waits for it
//     to go away, until ctx ends (ErrSocketInUse).
//   - The listener's Close removes the socket file only if path still
//     holds the very file this call created (same device and inode; on
//     Windows same volume and file index), so a successor's socket is
//     never removed.
//
// On Windows the socket is an AF_UNIX socket (Windows 10 1803 or later)
// and the default path is per user, under %LOCALAPPDATA% (see
// [agentproto.PlatformSocketPath]); its folder is created when missing.
// Where one of the rules above cannot be enforced, ListenUnix returns an
// error rather than a weaker listener.
//
// The returned listener is a *net.UnixListener's Accept with that Close.
func ListenUnix(ctx context.Context, path string) (net.Listener, error) {
	if path == "" {
		path = agentproto.PlatformSocketPath()
	}
	if path == sockpath.Default() {
		if err := ensureDefaultDir(path); err != nil {
			return nil, fmt.Errorf("bridge: listen: %w", err)
		}
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
		return nil, fmt.Errorf("bridge: listen: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := restrictToOwner(dir, true); err != nil {
		return nil, fmt.Errorf("bridge: listen: making %s private: %w", dir, err)
	}
	tmp := filepath.Join(dir, "s")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("bridge: listen: %w", err)
	}
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, error) {
		ul.Close()
		return nil, fmt.Errorf("bridge: listen: %w", err)
	}
	if err := restrictToOwner(tmp, false); err != nil {
		return fail(err)
	}
	id, err := socketIdentity(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &unixListener{UnixListener: ul, path: path, id: id}, nil
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
		return false, fmt.Errorf("bridge: listen: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return false, fmt.Errorf("%w: %s", ErrNotSocket, path)
	}
	if err := ownedByCurrentUser(path, fi); err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrForeignSocket, path, err)
	}
	nc, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		nc.Close()
		return true, nil
	}
	if connRefused(err) || errors.Is(err, fs.ErrNotExist) {
		return false, nil // nobody listens: the file is stale (or gone)
	}
	return true, nil // a full backlog or a slow server: someone is there
}

// fileIdentity names one file for as long as it exists: device and inode
// on Unix, volume serial number and file index on Windows.
type fileIdentity struct{ volume, index uint64 }

type unixListener struct {
	*net.UnixListener
	path string
	id   fileIdentity
	once sync.Once
	err  error
}

// Close closes the listener and removes the socket file if it is still
// the one ListenUnix created. It is idempotent.
func (l *unixListener) Close() error {
	l.once.Do(func() {
		l.err = l.UnixListener.Close()
		if id, err := socketIdentity(l.path); err == nil && id == l.id {
			os.Remove(l.path)
		}
	})
	return l.err
}
