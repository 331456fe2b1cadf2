package extbridge

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestPingsKeepAnsweringExtensionConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pings atomic.Int32
		e := newEnv(t, HubOptions{})
		ext, err := e.connect(extbridgetest.Options{OnPing: func() { pings.Add(1) }})
		require.NoError(t, err)
		defer ext.Close()
		time.Sleep(10*time.Minute + time.Second)
		assert.Equal(t, int32(30), pings.Load(), "a ping every 20 s")
		assert.True(t, e.hub.Connected(), "an extension answering pings stays connected")
		select {
		case <-ext.Done():
			t.Fatal("connection dropped")
		default:
		}
	})
}

func TestUnresponsiveExtensionDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disconnected := make(chan time.Time, 1)
		e := newEnv(t, HubOptions{OnDisconnect: func(ConnInfo, error) { disconnected <- time.Now() }})
		start := time.Now()
		ext := e.dial(extbridgetest.Options{IgnorePings: true})
		at := <-disconnected
		// Pings at 20 s and 40 s go unanswered; at the 60 s check the
		// extension has been silent for the liveness timeout.
		assert.Equal(t, DefaultLivenessTimeout, at.Sub(start))
		<-ext.Done()
		assert.False(t, e.hub.Connected())
	})
}

func TestJSONPingsCountAsLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{IgnorePings: true})
		for range 10 {
			time.Sleep(20 * time.Second)
			require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"ping"}`)))
		}
		assert.True(t, e.hub.Connected())
	})
}

func TestStalledReaderClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disconnected := make(chan error, 1)
		e := newEnv(t, HubOptions{OnDisconnect: func(_ ConnInfo, err error) { disconnected <- err }})
		ext, err := e.connect(extbridgetest.Options{Stalled: true})
		require.NoError(t, err)
		defer ext.Close()
		start := time.Now()
		// The mode frame is already stuck; the queue fills, then senders
		// wait until the stalled writer is dropped.
		for i := 0; i < DefaultSendQueue+10; i++ {
			if e.hub.Emit(t.Context(), TextMessageContent("m", "x")) != nil {
				break
			}
		}
		err = <-disconnected
		assert.ErrorIs(t, err, ErrDisconnected)
		assert.LessOrEqual(t, time.Since(start), DefaultWriteTimeout)
		assert.False(t, e.hub.Connected())
	})
}
