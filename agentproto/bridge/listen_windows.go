//go:build windows

package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"golang.org/x/sys/windows"
)

// ensureDefaultDir creates the default socket's folder, private to the
// current user, when it is missing.
func ensureDefaultDir(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return restrictToOwner(dir, true)
}

// restrictToOwner makes the current user the owner of path (a directory
// or the socket file) and gives it a protected DACL granting that user
// alone full access, so that no inherited entry lets another user in.
// Access denied here is an error, never a silently weaker socket.
func restrictToOwner(path string, dir bool) error {
	sid, err := sockpath.CurrentUserSID()
	if err != nil {
		return err
	}
	inherit := uint32(windows.NO_INHERITANCE)
	if dir {
		inherit = windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT
	}
	acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
		AccessPermissions: windows.GENERIC_ALL,
		AccessMode:        windows.SET_ACCESS,
		Inheritance:       inherit,
		Trustee: windows.TRUSTEE{
			TrusteeForm:  windows.TRUSTEE_IS_SID,
			TrusteeType:  windows.TRUSTEE_IS_USER,
			TrusteeValue: windows.TrusteeValueFromSID(sid),
		},
	}}, nil)
	if err != nil {
		return fmt.Errorf("building the access list: %w", err)
	}
	h, err := sockpath.OpenNoFollow(path, windows.READ_CONTROL|windows.WRITE_DAC|windows.WRITE_OWNER)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer windows.CloseHandle(h)
	err = windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		sid, nil, acl, nil)
	if err != nil {
		return fmt.Errorf("setting the access list of %s: %w", path, err)
	}
	return nil
}

// ownedByCurrentUser reports an error unless the owner SID of path is the
// current user's.
func ownedByCurrentUser(path string, _ fs.FileInfo) error {
	me, err := sockpath.CurrentUserSID()
	if err != nil {
		return err
	}
	owner, err := sockpath.FileOwner(path)
	if err != nil {
		return fmt.Errorf("reading the owner: %w", err)
	}
	if !owner.Equals(me) {
		return fmt.Errorf("owned by %s", owner)
	}
	return nil
}

// socketIdentity returns the volume serial number and file index of path
// itself.
func socketIdentity(path string) (fileIdentity, error) {
	h, err := sockpath.OpenNoFollow(path, 0)
	if err != nil {
		return fileIdentity{}, err
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return fileIdentity{}, err
	}
	return fileIdentity{
		volume: uint64(info.VolumeSerialNumber),
		index:  uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow),
	}, nil
}

// connRefused reports whether a dial found nobody listening.
func connRefused(err error) bool { return errors.Is(err, windows.WSAECONNREFUSED) }
