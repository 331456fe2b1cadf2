package agentproto

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Errors of the client's peer check.
var (
	// ErrForeignPeer is returned by Dial (unless ClientOptions.InsecureSkipPeerCheck) when the
	// server runs as another user.
	ErrForeignPeer = errors.New("agentproto: the server runs as another user")
	// ErrPeerCredentials is returned by Dial (unless ClientOptions.InsecureSkipPeerCheck) when the
	// peer's credentials cannot be read.
	ErrPeerCredentials = errors.New("agentproto: cannot read the peer's credentials")
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
