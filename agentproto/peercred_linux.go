package agentproto

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// peerUID returns the user id of the process at the other end of a Unix
// socket connection, from SO_PEERCRED.
func peerUID(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("%w: %T has no peer credentials", ErrPeerCredentials, nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	if credErr != nil {
		return 0, fmt.Errorf("%w: %w", ErrPeerCredentials, credErr)
	}
	return int(cred.Uid), nil
}

func checkPeerIsCurrentUser(nc net.Conn) error {
	uid, err := peerUID(nc)
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("%w: the server runs as uid %d", ErrForeignPeer, uid)
	}
	return nil
}
