package hostcmd

import (
	"os"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// linkReadBuffer is the buffer under the link's frame reader.
const linkReadBuffer = 64 << 10

// OpenStdio opens the browser link on the standard streams, as
// nativemsg.OpenStdio, after making the pipes pollable (so that closing
// the link interrupts a blocked read or write, and the host can stop
// promptly on SIGTERM) and larger (fewer wake-ups per large frame).
func OpenStdio() (*nativemsg.Conn, error) {
	if preparePipe(0) {
		os.Stdin = os.NewFile(0, "/dev/stdin")
	}
	preparePipe(1)
	return nativemsg.OpenStdio(&nativemsg.ConnOptions{ReadBufferSize: linkReadBuffer})
}
