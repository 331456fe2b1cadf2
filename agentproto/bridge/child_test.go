package bridge_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/agentbridge/agentbridge/agentproto/bridge"
)

// Some tests need a process of their own (a lowered file limit, another
// user id): they re-run this test binary with childRoleEnv set, and
// TestMain runs the role instead of the tests.
const childRoleEnv = "AGENTPROTO_TEST_CHILD"

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
