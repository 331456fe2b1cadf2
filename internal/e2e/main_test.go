package e2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/browsertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	_ = browsertest.RemoveBuilds()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
