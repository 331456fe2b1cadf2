package agentproto_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	b := agentprototest.NewBridge(nil)
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	h, err := c.Health(t.Context())
	require.NoError(t, err)
	assert.True(t, h.ExtensionOnline())
	var res json.RawMessage
	require.NoError(t, c.Call(t.Context(), "browser.click", map[string]any{"ref": "@e1", "index": 3}, &res))
	assert.JSONEq(t, `{"ref":"@e1","index":3}`, string(res))
	_ = agentproto.TypeClick
}
