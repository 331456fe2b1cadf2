package extbridge

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func turnOf(c *extConn) turnHolder {
	c.turn.mu.Lock()
	defer c.turn.mu.Unlock()
	return c.turn.holder
}

// callerTurn connects a fake extension that leaves commands to the test,
// answers one command (read by the serve loop, which then leaves the turn
// free) and starts a second, whose caller holds the turn when it returns.
func callerTurn(t *testing.T, e *env, ctx context.Context) (*extbridgetest.Extension, *extConn, <-chan error, *extbridgetest.Command) {
	t.Helper()
	ext := e.dial(extbridgetest.Options{})
	c := e.hub.cur.Load()
	require.NotNil(t, c)
	errc, cmd := readInFlight(t, e, ext)
	require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "first"}))
	require.NoError(t, <-errc)
	synctest.Wait() // the serve loop leaves the turn after handing the result
	require.Equal(t, turnFree, turnOf(c))

	second := make(chan error, 1)
	go func() {
		_, err := e.hub.Read(ctx, "")
		second <- err
	}()
	cmd, err := ext.NextCommand(t.Context())
	require.NoError(t, err)
	synctest.Wait()
	require.Equal(t, turnCaller, turnOf(c))
	return ext, c, second, cmd
}

func TestCallerReadsItsOwnResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext, c, errc, cmd := callerTurn(t, e, t.Context())
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "second"}))
		require.NoError(t, <-errc)
		assert.Equal(t, turnFree, turnOf(c))
		// Nothing comes: the free turn goes back to the serve loop.
		time.Sleep(turnIdle)
		synctest.Wait()
		assert.Equal(t, turnServe, turnOf(c))
	})
}

// A caller that reads stops at once when its context ends; the serve loop
// reads what comes next.
func TestCallerReadingStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		ext, c, errc, cmd := callerTurn(t, e, ctx)
		cancel()
		assert.ErrorIs(t, <-errc, context.Canceled)
		synctest.Wait()
		assert.Equal(t, turnServe, turnOf(c))
		// The late result is ignored; the next command works.
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{}))
		errc, cmd = readInFlight(t, e, ext)
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "third"}))
		require.NoError(t, <-errc)
	})
}

// The hub's own wait ends a reading caller's wait too.
func TestCallerReadingTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{CommandTimeout: 2 * time.Second, ReplyMargin: time.Second})
		_, _, errc, _ := callerTurn(t, e, t.Context())
		start := time.Now()
		err := <-errc
		assert.ErrorIs(t, err, ErrTimeout)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

// A lost connection fails the reading caller's command.
func TestCallerReadingDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext, _, errc, _ := callerTurn(t, e, t.Context())
		require.NoError(t, ext.Conn().CloseNow())
		assert.ErrorIs(t, <-errc, ErrDisconnected)
	})
}

// A frame other than a result, read by a caller, is handled by the serve
// loop (here a panel request answered while the command waits), and so is a
// result too large for the gate.
func TestCallerReadingHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext, c, errc, cmd := callerTurn(t, e, t.Context())
		f, err := ext.Request(t.Context(), "list_models", "models")
		require.NoError(t, err)
		assert.Equal(t, "models", f.Type)
		assert.Equal(t, turnServe, turnOf(c))
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "second"}))
		require.NoError(t, <-errc)
		synctest.Wait()

		// The turn is free again: a large result goes to the serve loop.
		require.Equal(t, turnFree, turnOf(c))
		errc, cmd = readInFlight(t, e, ext)
		synctest.Wait()
		require.Equal(t, turnCaller, turnOf(c))
		big := strings.Repeat("x", 2*gateSize)
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: big}))
		res := <-errc
		require.NoError(t, res)
	})
}

// A frame sent while the turn is free is read within turnIdle.
func TestFreeTurnReclaimedForFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		c := e.hub.cur.Load()
		errc, cmd := readInFlight(t, e, ext)
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{}))
		require.NoError(t, <-errc)
		synctest.Wait()
		require.Equal(t, turnFree, turnOf(c))
		start := time.Now()
		f, err := ext.Request(t.Context(), "list_models", "models")
		require.NoError(t, err)
		assert.Equal(t, "models", f.Type)
		assert.LessOrEqual(t, time.Since(start), turnIdle)
	})
}

func TestFrameHeader(t *testing.T) {
	for _, tc := range []struct {
		in    []byte
		total int64
		ok    bool
	}{
		{[]byte{0x81}, 0, false},
		{[]byte{0x81, 0x85, 1, 2, 3, 4}, 11, true},
		{[]byte{0x81, 0x85, 1, 2, 3}, 0, false},
		{[]byte{0x81, 0x05}, 7, true},
		{[]byte{0x82, 0xfe, 0x01, 0x00, 1, 2, 3, 4}, 8 + 256, true},
		{[]byte{0x81, 0xfe, 0x01}, 0, false},
		{[]byte{0x81, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4}, 14 + 1<<16, true},
		{[]byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1<<63 - 1, true},
	} {
		total, first, ok := frameHeader(tc.in)
		assert.Equal(t, tc.ok, ok, "% x", tc.in)
		assert.Equal(t, tc.total, total, "% x", tc.in)
		if ok {
			assert.Equal(t, tc.in[0], first)
		}
	}
}

// The gate passes up one frame at a time, whatever the reader asks for.
func TestFrameGateOneFrameAtATime(t *testing.T) {
	frames := []byte{0x81, 0x02, 'h', 'i', 0x81, 0x03, 'y', 'o', 'u'}
	g := newFrameGate(nil, frames)
	p := make([]byte, 64)
	n, err := g.Read(p)
	require.NoError(t, err)
	assert.Equal(t, frames[:4], p[:n])
	n, err = g.Read(p)
	require.NoError(t, err)
	assert.Equal(t, frames[4:], p[:n])
}
