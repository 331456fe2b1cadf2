package main

import "github.com/agentbridge/agentbridge/nativemsg"

// linkReadBuffer is the buffer under the link's frame reader: requests'
// answers that arrive together are read with one system call.
const linkReadBuffer = 64 << 10

// openStdio opens the browser link on the standard streams
// (nativemsg.OpenStdio, whose Close interrupts a blocked read, so that
// the host stops promptly on SIGTERM).
func openStdio() (*nativemsg.Conn, error) {
	return nativemsg.OpenStdio(&nativemsg.ConnOptions{ReadBufferSize: linkReadBuffer})
}
