// Package sockopt sets the socket options the module's tests need, on
// every platform they build for: a peer that never reads is simulated with
// a small receive buffer, which fills after a few kilobytes.
package sockopt

import "syscall"

// ReceiveBuffer returns a [net.Dialer] Control function that sets the
// socket's receive buffer (SO_RCVBUF) to n bytes before it connects, so the
// TCP window it offers stays small from the first segment.
func ReceiveBuffer(n int) func(network, address string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = setReceiveBuffer(fd, n) }); err != nil {
			return err
		}
		return serr
	}
}
