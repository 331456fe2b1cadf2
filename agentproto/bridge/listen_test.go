package bridge_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ap")
	require.NoError(t, err)
	t.Cleanup(func() { removeTree(dir) })
	return dir
}

func TestListenUnixRefusesNonSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "s.sock")
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))
	_, err := bridge.ListenUnix(t.Context(), path)
	assert.ErrorIs(t, err, bridge.ErrNotSocket)
	data, _ := os.ReadFile(path)
	assert.Equal(t, "precious", string(data), "never replaced")
}

func TestListenUnixReplacesStaleSocket(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	stale.SetUnlinkOnClose(false)
	stale.Close() // the file stays; nobody listens
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	defer l.Close()
	nc, err := net.Dial("unix", path)
	require.NoError(t, err)
	nc.Close()
}

func TestListenUnixWaitsForLiveServer(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	first, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	_, err = bridge.ListenUnix(ctx, path)
	assert.ErrorIs(t, err, bridge.ErrSocketInUse)

	done := make(chan error, 1)
	go func() {
		l, err := bridge.ListenUnix(t.Context(), path)
		if err == nil {
			l.Close()
		}
		done <- err
	}()
	first.Close() // the predecessor exits: the successor takes over
	assert.NoError(t, <-done)
}

func TestCloseRemovesOnlyOwnSocket(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	first, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	// A successor replaced the file (as after a takeover).
	require.NoError(t, os.Remove(path))
	second, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	defer second.Close()
	require.NoError(t, first.Close())
	_, err = os.Lstat(path)
	assert.NoError(t, err, "the successor's socket is left alone")
	require.NoError(t, second.Close())
	_, err = os.Lstat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "its own socket is removed")
	assert.NoError(t, second.Close(), "Close is idempotent")
}

func TestDialChecksServerUser(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	defer l.Close()
	go func() {
		if nc, err := l.Accept(); err == nil {
			nc.Close()
		}
	}()
	c, err := agentproto.Dial(t.Context(), path, nil) // checks the server's user
	require.NoError(t, err, "the server runs as this user")
	c.Close()
}

// TestDialReadsNoEnvironment checks that Dial uses only its arguments, and
// that DialEnv is the explicit way to follow WEBOPERATOR_* variables.
func TestDialReadsNoEnvironment(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	srv := bridge.NewServer(&bridge.ServerOptions{Token: "env-token"})
	go srv.Serve(l)
	defer srv.Close()
	t.Setenv(agentproto.EnvToken, "env-token")
	t.Setenv(agentproto.EnvSocket, path)

	c, err := agentproto.Dial(t.Context(), path, nil)
	require.NoError(t, err)
	_, err = c.Health(t.Context())
	assert.ErrorIs(t, err, agentproto.ErrUnauthorized, "Dial sends no token it was not given")
	c.Close()

	env := map[string]string{agentproto.EnvToken: "env-token", agentproto.EnvSocket: path}
	c, err = agentproto.DialEnv(t.Context(), func(k string) string { return env[k] }, nil)
	require.NoError(t, err)
	_, err = c.Health(t.Context())
	assert.NoError(t, err, "DialEnv follows the variables")
	c.Close()

	opts := &agentproto.ClientOptions{Token: "other"}
	c, err = agentproto.DialEnv(t.Context(), func(k string) string { return env[k] }, opts)
	require.NoError(t, err)
	_, err = c.Health(t.Context())
	assert.ErrorIs(t, err, agentproto.ErrUnauthorized, "opts.Token wins over the variable")
	assert.Equal(t, "other", opts.Token, "opts is not modified")
	c.Close()

	cfg, err := agentproto.ConfigFromEnv(nil)
	require.NoError(t, err)
	c, err = agentproto.Dial(t.Context(), cfg.SocketPath, cfg.ClientOptions())
	require.NoError(t, err)
	_, err = c.Health(t.Context())
	assert.NoError(t, err, "Config.ClientOptions carries the token")
	c.Close()
}

// removeTree removes dir file by file: os.RemoveAll on Windows deletes with
// POSIX semantics, which Wine 8 refuses.
func removeTree(dir string) {
	var paths []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
		paths = append(paths, p)
		return nil
	})
	for i := len(paths) - 1; i >= 0; i-- {
		os.Remove(paths[i])
	}
}
