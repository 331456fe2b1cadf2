package agentproto

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeerOwner returns nil if the process at the other end of a Unix
// socket connection runs as the current (effective) user: it reads the
// peer's credentials with SO_PEERCRED.
func checkPeerOwner(nc net.Conn) error {
	raw, err := peerRawConn(nc)
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	if credErr != nil {
		return fmt.Errorf("%w: %w", ErrPeerCredentials, credErr)
	}
	return comparePeerUID(int(cred.Uid), os.Geteuid())
}
