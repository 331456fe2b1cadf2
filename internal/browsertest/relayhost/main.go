// Command relayhost is a native messaging host for tests: it dials the
// Unix socket named by $AGENTBRIDGE_RELAY_SOCKET and copies bytes both ways
// between that socket and its standard streams, so that the test on the
// other end speaks the native port's frames to the extension itself.
//
// When standard input ends (the extension dropped the port) it closes the
// socket's writing side, so the test reads EOF, and exits. When the test
// closes the socket it exits, and Chrome sees the port close.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	path := os.Getenv("AGENTBRIDGE_RELAY_SOCKET")
	if path == "" {
		fmt.Fprintln(os.Stderr, "relayhost: AGENTBRIDGE_RELAY_SOCKET is not set")
		os.Exit(2)
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "relayhost:", err)
		os.Exit(1)
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(conn, os.Stdin)
		conn.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(os.Stdout, conn)
		done <- struct{}{}
	}()
	<-done
	conn.Close()
}
