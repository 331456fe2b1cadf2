// Command relayhost is a native messaging host for tests: it dials the
// Unix socket named by $AGENTBRIDGE_RELAY_SOCKET and copies bytes both ways
// between that socket and its standard streams (browsertest.RunRelay), so
// that the test on the other end speaks the native port's frames to the
// extension itself.
//
// When standard input ends (the extension dropped the port) it closes the
// socket's writing side, so the test reads EOF, and exits. When the test
// closes the socket it exits, and Chrome sees the port close.
package main

import (
	"fmt"
	"os"

	"github.com/agentbridge/agentbridge/internal/browsertest"
)

func main() {
	path := os.Getenv(browsertest.RelayEnv)
	if path == "" {
		fmt.Fprintln(os.Stderr, "relayhost:", browsertest.RelayEnv, "is not set")
		os.Exit(2)
	}
	if err := browsertest.RunRelay(path); err != nil {
		fmt.Fprintln(os.Stderr, "relayhost:", err)
		os.Exit(1)
	}
}
