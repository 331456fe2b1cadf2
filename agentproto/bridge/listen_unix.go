//go:build unix

package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ensureDefaultDir does nothing on Unix: the default path is in /tmp.
func ensureDefaultDir(string) error { return nil }

// restrictToOwner gives path mode 0700 (a directory) or 0600 (the socket).
// os.MkdirTemp already creates directories 0700, whatever the umask.
func restrictToOwner(path string, dir bool) error {
	if dir {
		return nil
	}
	return os.Chmod(path, 0o600)
}

// ownedByCurrentUser reports an error unless fi (the Lstat of path) is
// owned by the effective user.
func ownedByCurrentUser(_ string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d", st.Uid)
	}
	return nil
}

// socketIdentity returns the device and inode of path itself (not
// following a symbolic link).
func socketIdentity(path string) (fileIdentity, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileIdentity{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdentity{}, errors.New("no inode information")
	}
	return fileIdentity{volume: uint64(st.Dev), index: uint64(st.Ino)}, nil
}

// connRefused reports whether a dial found nobody listening.
func connRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
