package wire

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Released frame buffers are overwritten with garbage, and misuse of
	// one panics: a buffer reused too early shows in the bytes compared.
	SetDebug(true)
	goleak.VerifyTestMain(m)
}
