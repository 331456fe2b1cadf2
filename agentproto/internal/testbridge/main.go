package testbridge

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/peakmem"
	"go.uber.org/goleak"
)

// PeakLimit is the most memory a test package of agentproto's may hold
// resident at once, -race included: the test binary fails when its peak
// went over it, so that the tests keep running on a laptop.
const PeakLimit = 2 << 30

// peakGuard runs the tests, then fails the binary when its peak resident
// memory went over PeakLimit.
type peakGuard struct {
	m   *testing.M
	pkg string
}

func (g peakGuard) Run() int {
	code := g.m.Run()
	if err := peakmem.Check(PeakLimit); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s's tests: %v\n", g.pkg, err)
		code = 1
	}
	return code
}

// Main is the TestMain of agentproto's test packages: released frame
// buffers are overwritten with garbage, and misuse of one panics (a buffer
// reused too early shows in the bytes compared); no goroutine may outlive
// the tests; and the peak memory stays under PeakLimit. It exits.
func Main(m *testing.M, pkg string) {
	wire.SetDebug(true)
	goleak.VerifyTestMain(peakGuard{m, pkg})
}
