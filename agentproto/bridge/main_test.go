package bridge_test

import (
	"os"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/testbridge"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	testbridge.Main(m, "agentproto/bridge")
}
