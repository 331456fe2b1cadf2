package agentproto_test

import (
	"os"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	// Released frame buffers are overwritten with garbage, and misuse of
	// one panics: a buffer reused too early shows in the bytes compared.
	wire.SetDebug(true)
	goleak.VerifyTestMain(m)
}
