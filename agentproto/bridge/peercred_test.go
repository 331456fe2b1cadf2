//go:build linux || darwin || freebsd

package bridge_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobody is the user id the foreign server runs as.
const nobody = 65534

// Dial refuses a server that runs as another user before writing
// anything, so the token never reaches a socket someone else planted
// (issue 9). The opt-out connects and sends.
func TestDialRefusesServerOfAnotherUser(t *testing.T) {
	requireRoot(t, "to run a server as another user")
	// A copy of this test binary that the other user can run, and a
	// folder it can create its socket in.
	dir := shortTempDir(t)
	require.NoError(t, os.Chmod(dir, 0o755))
	exe, err := os.Executable()
	require.NoError(t, err)
	copied := filepath.Join(dir, "test.bin")
	copyFile(t, exe, copied, 0o755)
	sockDir := filepath.Join(dir, "sock")
	require.NoError(t, os.Mkdir(sockDir, 0o700))
	require.NoError(t, os.Chown(sockDir, nobody, nobody))
	path := filepath.Join(sockDir, "s.sock")

	child := startChild(t, copied, "foreign-listener",
		&syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}, path)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, uint32(nobody), fi.Sys().(*syscall.Stat_t).Uid, "the socket belongs to the other user")

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, err := agentproto.Dial(ctx, path, &agentproto.ClientOptions{Token: "secret-token"})
	if err == nil {
		c.Close()
	}
	require.ErrorIs(t, err, agentproto.ErrForeignPeer)
	assert.Contains(t, err.Error(), "uid 65534")
	line, err := child.readLine()
	require.NoError(t, err)
	assert.Equal(t, "received 0", line, "not one byte, least of all the token, was written")

	// The explicit opt-out talks to it.
	c, err = agentproto.Dial(ctx, path, &agentproto.ClientOptions{Token: "secret-token", InsecureSkipPeerCheck: true})
	require.NoError(t, err)
	callCtx, cancelCall := context.WithTimeout(ctx, 100*time.Millisecond)
	err = c.Call(callCtx, agentproto.TypeHealth, nil, nil)
	cancelCall()
	assert.ErrorIs(t, err, agentproto.ErrTimeout, "the foreign server never answers")
	c.Close()
	line, err = child.readLine()
	require.NoError(t, err)
	assert.NotEqual(t, "received 0", line, "with the check off, the request was sent")
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}
