package browsertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/internal/browsertest"
)

// TestStartWithWeboperatorHost is docs/browser-tests.md's example of the harness:
// Chromium with the reference extension starts the example host, and an
// agent reaches the extension through it.
func TestStartWithWeboperatorHost(t *testing.T) {
	host := browsertest.Build(t, "github.com/agentbridge/agentbridge/examples/weboperator-host")
	dir, err := os.MkdirTemp("", "sock-") // a Unix socket path must be short: not t.TempDir()
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, token := filepath.Join(dir, "bridge.sock"), "test-token"
	b := browsertest.Start(t, &browsertest.Options{ // skips without Chromium, fails in CI
		HostPath: host, // its manifest goes to <profile>/NativeMessagingHosts
		Env:      []string{agentproto.EnvToken + "=" + token, agentproto.EnvSocket + "=" + sock},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := browsertest.DialAgent(ctx, sock, token) // once the host is up and the extension said hello
	require.NoError(t, err, "chromium output:\n%s", b.Output())
	defer c.Close()
	health, err := c.Health(ctx)
	require.NoError(t, err)
	assert.True(t, health.ExtensionOnline())
	// b.Close runs at cleanup: Chromium and every process it started are gone, checked by pid.
}
