package sockopt_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/sockopt"
)

// The option is applied: the kernel reports a receive buffer near the one
// asked for (Linux doubles it for bookkeeping), far below its default.
func TestReceiveBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			var b [1]byte
			c.Read(b[:])
		}
	}()
	d := net.Dialer{Control: sockopt.ReceiveBuffer(4096)}
	c, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	got, err := receiveBuffer(c.(*net.TCPConn))
	require.NoError(t, err)
	require.LessOrEqual(t, got, 16384, "SO_RCVBUF after asking for 4096")
}
