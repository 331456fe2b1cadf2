package agentprototest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBridgeEcho(t *testing.T) {
	b := agentprototest.NewBridge(nil)
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	var res json.RawMessage
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"ref":"@e1"}`), &res))
	assert.Equal(t, `{"ref":"@e1"}`, string(res))
	assert.Equal(t, 1, b.Extension.Received())
}

func TestAnswerOnce(t *testing.T) {
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Manual: true})
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	go c.Call(context.Background(), agentproto.TypeClick, nil, nil)
	r := <-b.Extension.Requests()
	require.NoError(t, r.Fail("boom"))
	assert.ErrorIs(t, r.Reply(1), agentprototest.ErrAnswered)
}
