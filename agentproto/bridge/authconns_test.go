package bridge_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// readClose reads the frames of a connection until it ends and returns
// them.
func readClose(nc net.Conn) []string {
	r := nativemsg.NewReader(nc, nil)
	var frames []string
	for {
		body, err := r.ReadMessage(nil)
		if err != nil {
			return frames
		}
		frames = append(frames, string(body))
	}
}

// readingClose reads nc in a goroutine from now on (a pipe's writer waits
// for its reader) and yields its frames once it ends.
func readingClose(nc net.Conn) <-chan []string {
	ch := make(chan []string, 1)
	go func() { ch <- readClose(nc) }()
	return ch
}

// A connection that sends no authenticated request within AuthTimeout is
// closed with an error frame saying why; one that has authenticated stays
// (issue 21 item 3).
func TestConnectionsWithoutAuthenticatedRequestTimeOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "t"}})
		defer b.Close()
		synctest.Wait()
		silent, err := b.Listener.Dial(t.Context())
		require.NoError(t, err)
		defer silent.Close()
		silentFrames := readingClose(silent)
		wrongToken, err := b.Dial(t.Context(), &agentproto.ClientOptions{Token: "nope"})
		require.NoError(t, err)
		defer wrongToken.Close()
		_, err = wrongToken.Health(t.Context())
		require.ErrorIs(t, err, agentproto.ErrUnauthorized)
		agent, err := b.Dial(t.Context(), &agentproto.ClientOptions{Token: "t"})
		require.NoError(t, err)
		defer agent.Close()
		_, err = agent.Health(t.Context())
		require.NoError(t, err)

		time.Sleep(bridge.DefaultAuthTimeout - time.Second)
		synctest.Wait()
		_, err = wrongToken.Health(t.Context())
		require.ErrorIs(t, err, agentproto.ErrUnauthorized, "still open just before the timeout")

		time.Sleep(2 * time.Second)
		assert.Equal(t, []string{`{"error":"Connection closed: no authenticated request within 10s"}`}, <-silentFrames)
		_, err = wrongToken.Health(t.Context())
		assert.ErrorIs(t, err, agentproto.ErrClosed, "a wrong token does not count")
		_, err = agent.Health(t.Context())
		assert.NoError(t, err, "the agent stays")
	})
}

// More connections than MaxConnections that never authenticate cannot
// lock an agent out: beyond MaxUnauthConnections the oldest of them is
// closed, with an error frame, to make room (issue 21 item 3).
func TestUnauthenticatedConnectionsCannotLockAgentsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "t"}})
		defer b.Close()
		synctest.Wait()
		agents := make([]*agentproto.Client, 10)
		for i := range agents {
			c, err := b.Dial(t.Context(), &agentproto.ClientOptions{Token: "t"})
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Health(t.Context())
			require.NoError(t, err)
			agents[i] = c
		}
		idle := make([]net.Conn, bridge.DefaultMaxConnections+6)
		for i := range idle {
			nc, err := b.Listener.Dial(t.Context())
			require.NoError(t, err)
			defer nc.Close()
			idle[i] = nc
		}
		oldestFrames := readingClose(idle[0])
		synctest.Wait()

		c, err := b.Dial(t.Context(), &agentproto.ClientOptions{Token: "t"})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Health(t.Context())
		require.NoError(t, err, "a new agent is answered")
		for _, a := range agents {
			_, err = a.Health(t.Context())
			assert.NoError(t, err, "the agents already there stay")
		}
		evicted := fmt.Sprintf(`{"error":"Connection closed: too many connections to the bridge have not sent an authenticated request; the limit is %d"}`, bridge.DefaultMaxUnauthConnections)
		assert.Equal(t, []string{evicted}, <-oldestFrames, "the oldest is closed first")
		newest := idle[len(idle)-1]
		newest.SetReadDeadline(time.Now().Add(time.Second))
		_, err = newest.Read(make([]byte, 1))
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the newest stays open")
	})
}

// A negative AuthTimeout keeps connections that only listen to events, as
// the reference allows without a token.
func TestNegativeAuthTimeoutKeepsListeners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "t", AuthTimeout: -1}})
		defer b.Close()
		synctest.Wait()
		listener, err := b.Listener.Dial(t.Context())
		require.NoError(t, err)
		defer listener.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		go b.Server.Publish(json.RawMessage(`{"kind":"task:update","task":{"id":"x"}}`))
		body, err := nativemsg.NewReader(listener, nil).ReadMessage(nil)
		require.NoError(t, err)
		assert.Equal(t, `{"kind":"event","event":{"kind":"task:update","task":{"id":"x"}}}`, string(body))
	})
}
