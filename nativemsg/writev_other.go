//go:build !unix

package nativemsg

type fileVectors struct{}

func newFileVectors(any) *fileVectors { return nil }

func (*fileVectors) writeParts([][]byte) error { panic("unreachable") }
