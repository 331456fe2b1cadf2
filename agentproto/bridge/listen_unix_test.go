//go:build unix

package bridge_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenUnixMode0600EvenWithPermissiveUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	defer l.Close()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket|0o600, fi.Mode()&(os.ModeType|os.ModePerm))
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary directory is left behind")
}

// requireUnixSockets does nothing: every Unix system has them.
func requireUnixSockets(*testing.T) {}

// requireRoot skips a test that needs root (why says what for), and fails
// it when CI is set: CI runs as root, so there it must run.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root " + why + "; CI runs as root, so it must run there")
	}
	t.Skip("needs root " + why)
}

// TestListenUnixRefusesForeignSocket checks that a socket owned by another
// user is never replaced, live or stale. It needs root to chown the socket.
func TestListenUnixRefusesForeignSocket(t *testing.T) {
	requireRoot(t, "to give a socket to another user")
	dir := shortTempDir(t)
	path := filepath.Join(dir, "s.sock")
	foreign, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	foreign.SetUnlinkOnClose(false)
	defer foreign.Close()
	require.NoError(t, os.Chown(path, 65534, 65534))
	before, err := os.Lstat(path)
	require.NoError(t, err)

	// Bounded, so that a listener that mistook the socket for its own
	// (and waited for it to go) fails instead of hanging.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = bridge.ListenUnix(ctx, path)
	assert.ErrorIs(t, err, bridge.ErrForeignSocket)
	foreign.Close() // stale now: still another user's
	_, err = bridge.ListenUnix(ctx, path)
	assert.ErrorIs(t, err, bridge.ErrForeignSocket)
	after, err := os.Lstat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the foreign socket is left in place")
}
