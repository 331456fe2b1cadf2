//go:build windows

package agentproto

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"golang.org/x/sys/windows"
)

// TestCheckDialedPeerFileOwner checks the part of Dial's Windows check
// that needs no AF_UNIX socket (so that it runs under Wine too): the owner
// SID of the dialed path decides, and with nothing to check the answer is
// a refusal, never a pass.
func TestCheckDialedPeerFileOwner(t *testing.T) {
	a, b := net.Pipe() // no raw socket: the file owner stands alone
	defer a.Close()
	defer b.Close()
	path := tempFile(t)

	if err := checkDialedPeer(a, path); err != nil {
		t.Errorf("a file of the current user: %v", err)
	}
	if err := checkDialedPeer(a, ""); !errors.Is(err, ErrPeerCredentials) {
		t.Errorf("nothing to check: got %v, want ErrPeerCredentials", err)
	}
	if err := checkDialedPeer(a, path+".missing"); !errors.Is(err, ErrPeerCredentials) {
		t.Errorf("an unreadable owner: got %v, want ErrPeerCredentials", err)
	}
}

// TestCheckDialedPeerForeignOwner checks that a socket file of another
// user is refused.
func TestCheckDialedPeerForeignOwner(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	path := tempFile(t)
	// Give it to LocalSystem, which needs a privilege most users lack.
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sockpath.OpenNoFollow(path, windows.WRITE_OWNER)
	if err != nil {
		t.Fatal(err)
	}
	err = windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION, system, nil, nil, nil)
	windows.CloseHandle(h)
	if err != nil {
		t.Skipf("cannot give a file to another user here (%v): the foreign-owner case did not run", err)
	}
	if owner, err := sockpath.FileOwner(path); err != nil || !owner.Equals(system) {
		t.Skip("this system does not keep the owner set (Wine reports the Unix owner): the foreign-owner case did not run")
	}
	if err := checkDialedPeer(a, path); !errors.Is(err, ErrForeignPeer) {
		t.Errorf("a file of LocalSystem: got %v, want ErrForeignPeer", err)
	}
}

// tempFile returns a new empty file of the current user.
func tempFile(t *testing.T) string {
	dir, err := os.MkdirTemp("", "peer")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path); os.Remove(dir) })
	return path
}
