//go:build unix

package redisstore

import (
	"syscall"

	"github.com/stretchr/testify/require"
)

// freeze stops the server's process (SIGSTOP): it keeps its connections
// and the kernel keeps accepting new ones, but nothing is answered until
// thaw. Unlike CLIENT PAUSE, it lasts until the test ends it, however slow
// the machine.
func (s *redisServer) freeze() {
	s.t.Helper()
	require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGSTOP))
}

// thaw resumes a frozen server (SIGCONT).
func (s *redisServer) thaw() {
	s.t.Helper()
	require.NoError(s.t, s.cmd.Process.Signal(syscall.SIGCONT))
}
