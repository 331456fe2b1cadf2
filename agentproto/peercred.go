package agentproto

import (
	"fmt"
	"net"
	"syscall"
)

// The per-OS checkPeerOwner(nc net.Conn) error (peercred_*.go) returns
// nil when the server at the other end of nc runs as the current user,
// an error matching ErrForeignPeer when it runs as another, and one
// matching ErrPeerCredentials when that cannot be told.

// peerRawConn returns nc's raw connection, for reading its credentials.
func peerRawConn(nc net.Conn) (syscall.RawConn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no peer credentials", ErrPeerCredentials, nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPeerCredentials, err)
	}
	return raw, nil
}

func comparePeerUID(peer, self int) error {
	if peer != self {
		return fmt.Errorf("%w: the server runs as uid %d", ErrForeignPeer, peer)
	}
	return nil
}
