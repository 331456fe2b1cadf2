//go:build linux || darwin || freebsd

package agentproto

import "fmt"

// comparePeerUID is the check of the systems whose sockets tell the
// peer's uid (peercred_linux.go, peercred_bsd.go).
func comparePeerUID(peer, self int) error {
	if peer != self {
		return fmt.Errorf("%w: the server runs as uid %d", ErrForeignPeer, peer)
	}
	return nil
}
