//go:build unix

package agentproto_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenUnixMode0600EvenWithPermissiveUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := agentproto.ListenUnix(t.Context(), path)
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
