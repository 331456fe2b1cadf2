package agentprototest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Released frame buffers are overwritten with garbage, and misuse of
	// one panics: a buffer reused too early shows in the bytes compared.
	wire.SetDebug(true)
	goleak.VerifyTestMain(m)
}

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

// TestSerialAnswersBatchedRequests drives the Serial mode over OS pipes,
// where requests that arrive together are answered together: every call
// still gets its own answer.
func TestSerialAnswersBatchedRequests(t *testing.T) {
	hostEnd, browserEnd, err := nativemsg.OSPipe()
	require.NoError(t, err)
	b := agentprototest.NewBridgeOn(hostEnd, browserEnd, &agentprototest.BridgeOptions{
		Extension: agentprototest.Options{Handler: agentprototest.Echo, Serial: true}})
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	const agents, calls = 8, 50
	errs := make(chan error, agents*calls)
	var callers sync.WaitGroup
	for a := range agents {
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		for i := range calls {
			callers.Go(func() {
				payload := fmt.Sprintf(`{"agent":%d,"call":%d,"pad":%q}`, a, i, strings.Repeat("x", i*97))
				var res json.RawMessage
				if err := c.Call(t.Context(), agentproto.TypeText, json.RawMessage(payload), &res); err != nil {
					errs <- err
				} else if string(res) != payload {
					errs <- fmt.Errorf("call %d/%d got another answer: %.60s", a, i, res)
				}
			})
		}
	}
	callers.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Equal(t, agents*calls, b.Extension.Received())
}
