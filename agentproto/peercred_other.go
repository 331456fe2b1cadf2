//go:build !linux && !darwin && !freebsd && !windows

package agentproto

import (
	"fmt"
	"net"
	"runtime"
)

// checkPeerOwner cannot tell who runs the server on this system: it
// refuses, so that Dial sends nothing unless the caller opts out with
// ClientOptions.InsecureSkipPeerCheck.
func checkPeerOwner(nc net.Conn) error {
	return fmt.Errorf("%w: not supported on %s; set ClientOptions.InsecureSkipPeerCheck to connect anyway", ErrPeerCredentials, runtime.GOOS)
}
