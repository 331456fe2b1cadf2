//go:build linux || darwin || freebsd

package bridge_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// child is a re-run of this test binary in a role.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{}
}

func (c *child) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.Write(p)
}

// Stderr returns what the child wrote to its stderr so far.
func (c *child) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// startChild starts exe (this test binary when "") in role with args,
// and waits for its first line, "ready".
func startChild(t *testing.T, exe, role string, attr *syscall.SysProcAttr, args ...string) *child {
	t.Helper()
	if exe == "" {
		var err error
		exe, err = os.Executable()
		require.NoError(t, err)
	}
	c := &child{cmd: exec.Command(exe, args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), childRoleEnv+"="+role)
	c.cmd.SysProcAttr = attr
	c.cmd.Stderr = c
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	c.stdout = bufio.NewReader(out)
	require.NoError(t, c.cmd.Start())
	t.Cleanup(func() {
		c.stdin.Close()
		<-c.done
		if t.Failed() {
			t.Logf("child %s stderr:\n%s", role, c.Stderr())
		}
	})
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	line, err := c.stdout.ReadString('\n')
	require.NoError(t, err, "child %s: %s", role, c.Stderr())
	require.Equal(t, "ready\n", line)
	return c
}

// readLine returns the child's next stdout line without its newline.
func (c *child) readLine() (string, error) {
	line, err := c.stdout.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}
