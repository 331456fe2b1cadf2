//go:build !unix

package wire

import "syscall"

// directWriter writes nothing where raw non-blocking writes are not
// supported: Run writes everything.
type directWriter struct{}

func newDirectWriter(syscall.RawConn) *directWriter { return &directWriter{} }

func (*directWriter) tryWrite([]byte) (int, error) { return 0, nil }
