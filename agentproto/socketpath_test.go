package agentproto_test

import (
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"github.com/stretchr/testify/assert"
)

// TestDefaultSocketPathIsTheListeners: the client's documented default and
// the path package bridge listens on by default are one path.
func TestDefaultSocketPathIsTheListeners(t *testing.T) {
	assert.Equal(t, agentproto.DefaultSocketPath, sockpath.Unix)
}
