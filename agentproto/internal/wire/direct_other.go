//go:build !unix

package wire

import "syscall"

// directWriter is not available where raw non-blocking writes are not
// supported: Send then works as Push.
type directWriter struct{}

func newDirectWriter(syscall.RawConn) *directWriter { return nil }

func (*directWriter) tryWrite([]byte) (int, error) { panic("unreachable") }

func (*directWriter) writeAll([]byte) error { panic("unreachable") }
