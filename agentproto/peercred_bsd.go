//go:build darwin || freebsd

package agentproto

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeerOwner returns nil if the process at the other end of a Unix
// socket connection runs as the current (effective) user: it reads the
// peer's credentials with LOCAL_PEERCRED.
func checkPeerOwner(nc net.Conn) error {
	raw, err := peerRawConn(nc)
	if err != nil {
		return err
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	if credErr != nil {
		return fmt.Errorf("%w: %w", ErrPeerCredentials, credErr)
	}
	return comparePeerUID(int(cred.Uid), os.Geteuid())
}
