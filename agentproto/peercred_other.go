//go:build !linux && !windows

package agentproto

import (
	"fmt"
	"net"
	"runtime"
)

func checkPeerIsCurrentUser(nc net.Conn) error {
	return fmt.Errorf("%w: not supported on %s", ErrPeerCredentials, runtime.GOOS)
}
