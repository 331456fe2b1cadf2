//go:build windows

package sockpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// Default is per user on Windows, which has no shared /tmp:
// %LOCALAPPDATA%\WebOperator\agent.sock, a folder only its user (and
// SYSTEM and administrators) can reach. Without LOCALAPPDATA it falls back
// to Unix, which then fails to listen with a clear error.
func Default() string {
	if dir, err := os.UserCacheDir(); err == nil { // %LOCALAPPDATA%
		return filepath.Join(dir, "WebOperator", "agent.sock")
	}
	return Unix
}

// CurrentUserSID returns the SID of the user the process runs as.
func CurrentUserSID() (*windows.SID, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading the process token: %w", err)
	}
	return tu.User.Sid, nil
}

// OpenNoFollow opens path itself (an AF_UNIX socket is a reparse point,
// which must not be followed) with the given access.
func OpenNoFollow(path string, access uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	return windows.CreateFile(p, access,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
}

// FileOwner returns the owner SID of path itself.
func FileOwner(path string) (*windows.SID, error) {
	h, err := OpenNoFollow(path, windows.READ_CONTROL)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(h)
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return nil, err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return nil, err
	}
	if owner == nil {
		return nil, errors.New("the file has no owner")
	}
	return owner, nil
}
