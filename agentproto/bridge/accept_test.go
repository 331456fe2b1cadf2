//go:build linux

package bridge_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server that runs out of file descriptors keeps its socket: once the
// connections that used them up are gone, a new client is served (issue
// 10: one EMFILE used to end Serve and remove the socket for good).
func TestServeSurvivesFileDescriptorExhaustion(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "s.sock")
	const limit = 48
	child := startChild(t, "", "fdlimit-server", nil, path, "48")

	var idle []net.Conn
	defer func() {
		for _, nc := range idle {
			nc.Close()
		}
	}()
	for range 2 * limit {
		nc, err := net.Dial("unix", path)
		require.NoError(t, err)
		idle = append(idle, nc)
	}
	require.Eventually(t, func() bool { return strings.Contains(child.Stderr(), "too many open files") },
		10*time.Second, 10*time.Millisecond, "the server runs out of descriptors")
	for _, nc := range idle {
		nc.Close()
	}
	idle = nil

	var health *agentproto.HealthResult
	assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		c, err := agentproto.Dial(ctx, path, nil)
		if err != nil {
			return false
		}
		defer c.Close()
		health, err = c.Health(ctx)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "a client is served once descriptors are free again")
	if assert.NotNil(t, health) {
		assert.True(t, health.OK)
	}
	assert.NotContains(t, child.Stderr(), "serve returned", "Serve kept going")
}
