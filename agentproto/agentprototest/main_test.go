package agentprototest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/nativemsg"
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

// TestSerialAnswersBatchedRequests drives the Serial mode over OS pipes,
// where requests that arrive together are answered together: every call
// still gets its own answer.
func TestSerialAnswersBatchedRequests(t *testing.T) {
	hostR, extW, err := os.Pipe()
	require.NoError(t, err)
	extR, hostW, err := os.Pipe()
	require.NoError(t, err)
	hostEnd := nativemsg.NewConn(hostR, hostW, closeAll{hostR, hostW}, &nativemsg.ConnOptions{ReadBufferSize: 64 << 10})
	browserEnd := nativemsg.NewConn(extR, extW, closeAll{extR, extW}, &nativemsg.ConnOptions{
		ReadLimit: nativemsg.DefaultWriteLimit, WriteLimit: nativemsg.DefaultReadLimit, ReadBufferSize: 64 << 10})
	ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{Handler: agentprototest.Echo, Serial: true})
	host := agentproto.NewHost(hostEnd, nil)
	srv := agentproto.NewServer(agentproto.ServerOptions{Extension: host, AllowUnauthenticated: true})
	l := agentprototest.NewListener()
	var wg sync.WaitGroup
	wg.Go(func() { host.Run(context.Background()) })
	wg.Go(func() { srv.Serve(l) })
	t.Cleanup(func() {
		srv.Close()
		host.Close()
		ext.Close()
		wg.Wait()
	})

	require.Eventually(t, host.Online, 10*time.Second, time.Millisecond, "the extension's hello")

	const agents, calls = 8, 50
	errs := make(chan error, agents*calls)
	var callers sync.WaitGroup
	for a := range agents {
		nc, err := l.Dial(t.Context())
		require.NoError(t, err)
		c := agentproto.NewClient(nc, nil)
		defer c.Close()
		for i := range calls {
			callers.Go(func() {
				payload := fmt.Sprintf(`{"agent":%d,"call":%d,"pad":%q}`, a, i, strings.Repeat("x", i*97))
				var res json.RawMessage
				if err := c.Call(t.Context(), agentproto.TypeType, json.RawMessage(payload), &res); err != nil {
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
	assert.Equal(t, agents*calls, ext.Received())
}

type closeAll []*os.File

func (c closeAll) Close() error {
	for _, f := range c {
		f.Close()
	}
	return nil
}
