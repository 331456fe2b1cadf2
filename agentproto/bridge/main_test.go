package agentproto_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/peakmem"
	"go.uber.org/goleak"
)

// peakLimit is the most memory this package's tests may hold resident at
// once, -race included: the test binary fails when its peak went over it,
// so that the tests keep running on a laptop.
const peakLimit = 2 << 30

// peakGuard runs the tests, then fails the binary when its peak resident
// memory went over peakLimit.
type peakGuard struct{ m *testing.M }

func (g peakGuard) Run() int {
	code := g.m.Run()
	if err := peakmem.Check(peakLimit); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: agentproto's tests: %v\n", err)
		code = 1
	}
	return code
}

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	// Released frame buffers are overwritten with garbage, and misuse of
	// one panics: a buffer reused too early shows in the bytes compared.
	wire.SetDebug(true)
	goleak.VerifyTestMain(peakGuard{m})
}
