package agentproto_test

import (
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/internal/testbridge"
)

func TestMain(m *testing.M) { testbridge.Main(m, "agentproto") }
