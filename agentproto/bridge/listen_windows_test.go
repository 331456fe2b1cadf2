//go:build windows

package bridge_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// requireUnixSockets skips t where Windows has no AF_UNIX sockets
// (before Windows 10 1803, and Wine 8, which answers WSAEAFNOSUPPORT).
func requireUnixSockets(t *testing.T) {
	t.Helper()
	dir := shortTempDir(t)
	l, err := net.Listen("unix", filepath.Join(dir, "probe.sock"))
	if errors.Is(err, windows.WSAEAFNOSUPPORT) {
		t.Skip("this Windows (or Wine) has no AF_UNIX sockets: the agent socket cannot be tested here")
	}
	require.NoError(t, err)
	l.Close()
}

// TestListenUnixWindowsACL checks the Windows means of the 0600 promise:
// the socket file is owned by the current user and its DACL is protected
// (nothing inherited) and grants the current user alone.
func TestListenUnixWindowsACL(t *testing.T) {
	requireUnixSockets(t)
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	defer l.Close()

	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	require.NoError(t, err)
	me := tu.User.Sid
	p, err := windows.UTF16PtrFromString(path)
	require.NoError(t, err)
	h, err := windows.CreateFile(p, windows.READ_CONTROL, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	require.NoError(t, err)
	defer windows.CloseHandle(h)
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	require.NoError(t, err)
	owner, _, err := sd.Owner()
	require.NoError(t, err)
	assert.True(t, owner.Equals(me), "owned by the current user, not %s", owner)
	ctl, _, err := sd.Control()
	require.NoError(t, err)
	assert.NotZero(t, ctl&windows.SE_DACL_PROTECTED, "the DACL inherits nothing")
	dacl, _, err := sd.DACL()
	require.NoError(t, err)
	require.NotNil(t, dacl)
	require.Equal(t, uint16(1), dacl.AceCount, "one entry: the current user")
	var ace *windows.ACCESS_ALLOWED_ACE
	require.NoError(t, windows.GetAce(dacl, 0, &ace))
	sid := (*windows.SID)(unsafePointer(&ace.SidStart))
	assert.True(t, sid.Equals(me), "the one entry is the current user's")

	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary directory is left behind")
}

// TestSocketPathWindowsPerUser checks the per-user default of Windows,
// which has no shared /tmp.
func TestSocketPathWindowsPerUser(t *testing.T) {
	t.Setenv(agentproto.EnvSocket, "")
	local := os.Getenv("LOCALAPPDATA")
	require.NotEmpty(t, local)
	want := filepath.Join(local, "WebOperator", "agent.sock")
	assert.Equal(t, want, agentproto.PlatformSocketPath())
	cfg, err := agentproto.ConfigFromEnv(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, want, cfg.SocketPath)
	t.Setenv(agentproto.EnvSocket, `C:\elsewhere\s.sock`)
	assert.Equal(t, want, agentproto.PlatformSocketPath(), "the environment is not read")
	cfg, err = agentproto.ConfigFromEnv(nil)
	require.NoError(t, err)
	assert.Equal(t, `C:\elsewhere\s.sock`, cfg.SocketPath, "ConfigFromEnv reads it")
}
