package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/stretchr/testify/require"
)

// Some tests need a process of their own (a lowered file limit, another
// user id): they re-run this test binary with childRoleEnv set, and
// TestMain runs the role instead of the tests.
const childRoleEnv = "AGENTPROTO_TEST_CHILD"

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

// runChild runs a role in a child process and returns its exit code. It
// reads its parameters from os.Args[1:], prints "ready" on stdout when the
// parent may go on, and ends when its stdin closes.
func runChild(role string) int {
	args := os.Args[1:]
	var err error
	switch role {
	case "fdlimit-server":
		err = childFDLimitServer(args[0], args[1])
	case "foreign-listener":
		err = childForeignListener(args[0])
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childFDLimitServer serves the agent protocol at path with at most
// limit open files, and logs to stderr.
func childFDLimitServer(path, limit string) error {
	n, err := strconv.ParseUint(limit, 10, 64)
	if err != nil {
		return err
	}
	if err := setFileLimit(n); err != nil {
		return err
	}
	l, err := bridge.ListenUnix(context.Background(), path)
	if err != nil {
		return err
	}
	srv := bridge.NewServer(&bridge.ServerOptions{
		AllowUnauthenticated: true,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	served := make(chan struct{})
	go func() {
		err := srv.Serve(l)
		fmt.Fprintln(os.Stderr, "serve returned:", err)
		close(served)
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
	<-served
	return nil
}

// childForeignListener listens on a plain Unix socket at path (as
// whatever user the child runs as) and reports on stdout, for each
// connection in turn, how many bytes it received before the peer closed.
func childForeignListener(path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := os.Chmod(path, 0o777); err != nil {
		return err
	}
	fmt.Println("ready")
	go func() {
		io.Copy(io.Discard, os.Stdin)
		l.Close()
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			return nil
		}
		n, _ := io.Copy(io.Discard, nc)
		nc.Close()
		fmt.Println("received", n)
	}
}

// readLine returns the child's next stdout line without its newline.
func (c *child) readLine() (string, error) {
	line, err := c.stdout.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}
