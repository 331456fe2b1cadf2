//go:build windows

package agentproto

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"golang.org/x/sys/windows"
)

// sioAFUnixGetPeerPID is SIO_AF_UNIX_GETPEERPID (_WSAIOR(IOC_VENDOR, 256)):
// the process id of an AF_UNIX socket's peer, on Windows 10 1803 and later.
const sioAFUnixGetPeerPID = windows.IOC_OUT | windows.IOC_VENDOR | 256

// checkDialedPeer checks, before anything is written to conn, that the
// server at its other end runs as the current user. Windows AF_UNIX
// sockets have no SO_PEERCRED, so two checks stand in for it, and every
// one that can be made must pass:
//
//   - the owner SID of the socket file at path, the one Dial connected to,
//     which bridge.ListenUnix sets to the listening user;
//   - when Windows offers SIO_AF_UNIX_GETPEERPID, the user SID of the
//     listening process's token.
//
// When neither can be made, it returns ErrPeerCredentials: the token is
// never sent on an unchecked socket. The file check alone trusts that
// nobody else can swap the file between the dial and the check: true of
// the default path, whose folder only its user can write.
func checkDialedPeer(conn net.Conn, path string) error {
	me, err := sockpath.CurrentUserSID()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	checked := false
	if path != "" && path != "@" {
		owner, err := sockpath.FileOwner(path)
		if err != nil {
			return fmt.Errorf("%w: owner of %s: %w", ErrPeerCredentials, path, err)
		}
		if !owner.Equals(me) {
			return fmt.Errorf("%w: the socket file is owned by %s", ErrForeignPeer, owner)
		}
		checked = true
	}
	sid, err := peerProcessUser(conn)
	switch {
	case err == nil:
		if !sid.Equals(me) {
			return fmt.Errorf("%w: the server runs as %s", ErrForeignPeer, sid)
		}
		checked = true
	case errors.Is(err, errNoPeerPID):
		// An older Windows, or Wine: the file owner stands alone.
	default:
		return fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	if !checked {
		return fmt.Errorf("%w: neither the socket file nor the peer process is known", ErrPeerCredentials)
	}
	return nil
}

var errNoPeerPID = errors.New("SIO_AF_UNIX_GETPEERPID is not supported")

// peerProcessUser returns the user SID of the process at the other end
// of conn.
func peerProcessUser(conn net.Conn) (*windows.SID, error) {
	raw, err := peerRawConn(conn)
	if err != nil {
		return nil, errNoPeerPID // no socket: the file owner stands alone
	}
	var pid uint32
	var ioErr error
	if err := raw.Control(func(fd uintptr) {
		var n uint32
		ioErr = windows.WSAIoctl(windows.Handle(fd), sioAFUnixGetPeerPID, nil, 0,
			(*byte)(unsafe.Pointer(&pid)), uint32(unsafe.Sizeof(pid)), &n, nil, 0)
	}); err != nil {
		return nil, err
	}
	if ioErr != nil || pid == 0 {
		return nil, errNoPeerPID
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return nil, fmt.Errorf("opening the server process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return nil, fmt.Errorf("opening the server's token: %w", err)
	}
	defer tok.Close()
	tu, err := tok.GetTokenUser()
	if err != nil {
		return nil, fmt.Errorf("reading the server's user: %w", err)
	}
	return tu.User.Sid, nil
}
