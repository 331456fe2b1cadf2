package extbridge

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// A frame over ReadLimit ends the connection with 1009; the command in
// flight and OnDisconnect say so (not "closed by the extension"), and the
// extension's reconnect is accepted.
func TestFrameOverReadLimitIsReported(t *testing.T) {
	disconnected := make(chan error, 4)
	// Over TCP: on an in-memory pipe the fake, busy writing its big frame,
	// could not read the hub's close frame.
	e := newTCPEnv(t, HubOptions{ReadLimit: 4096, OnDisconnect: func(_ ConnInfo, err error) { disconnected <- err }})
	big := answer(func(c *extbridgetest.Command) *extbridgetest.Result {
		return &extbridgetest.Result{Content: strings.Repeat("x", 8192)}
	})
	ext := e.dial(t, extbridgetest.Options{Browser: big})

	_, err := e.hub.Read(t.Context(), "")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrFrameTooLarge)
	assert.ErrorIs(t, err, ErrDisconnected)
	var tooLarge *FrameTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.EqualValues(t, 4096, tooLarge.Limit)
	assert.NotContains(t, err.Error(), "closed by the extension")
	<-ext.Done()
	assert.EqualValues(t, 1009, ext.CloseStatus())

	derr := <-disconnected
	assert.ErrorIs(t, derr, ErrFrameTooLarge)
	assert.ErrorIs(t, derr, ErrDisconnected)

	small := answer(func(c *extbridgetest.Command) *extbridgetest.Result {
		return &extbridgetest.Result{Content: "ok"}
	})
	e.dial(t, extbridgetest.Options{Browser: small})
	require.NoError(t, e.hub.WaitConnected(t.Context()))
	res, err := e.hub.Read(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, "ok", res.Content)
}

// Every other end of the read loop keeps its own cause.
func TestDisconnectCauses(t *testing.T) {
	t.Run("close frame", func(t *testing.T) {
		disconnected := make(chan error, 1)
		e := newEnv(t, HubOptions{OnDisconnect: func(_ ConnInfo, err error) { disconnected <- err }})
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, ext.Conn().Close(websocket.StatusGoingAway, "worker stopped"))
		err := <-disconnected
		var closed *PeerClosedError
		require.ErrorAs(t, err, &closed)
		assert.Equal(t, 1001, closed.Code)
		assert.ErrorIs(t, err, ErrDisconnected)
		assert.NotErrorIs(t, err, ErrFrameTooLarge)
	})
	t.Run("connection lost", func(t *testing.T) {
		disconnected := make(chan error, 1)
		e := newEnv(t, HubOptions{OnDisconnect: func(_ ConnInfo, err error) { disconnected <- err }})
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, ext.Conn().CloseNow())
		err := <-disconnected
		var closed *PeerClosedError
		assert.False(t, errors.As(err, &closed), "%v", err)
		assert.NotErrorIs(t, err, ErrFrameTooLarge)
		assert.ErrorIs(t, err, ErrDisconnected)
		assert.Contains(t, err.Error(), "connection lost")
	})
}

// maskedFrame builds a client frame (masked, as RFC 6455 requires) with the
// given first header byte.
func maskedFrame(first byte, payload []byte) []byte {
	return clientFrame(first, payload, 0x01020304)
}

// A frame that breaks the WebSocket protocol is reported as a protocol
// error, not as the extension closing or the connection being lost.
func TestDisconnectCauseProtocolError(t *testing.T) {
	disconnected := make(chan error, 1)
	e := newTCPEnv(t, HubOptions{OnDisconnect: func(_ ConnInfo, err error) { disconnected <- err }})
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(e.url, "ws://"), "/ws"))
	require.NoError(t, err)
	defer c.Close()
	upgradeConn(t, c)
	_, err = c.Write(maskedFrame(0x81, []byte(`{"type":"browser_hello","token":"`+testToken+`"}`)))
	require.NoError(t, err)
	require.Eventually(t, e.hub.Connected, 10*time.Second, time.Millisecond)
	// FIN + RSV1 + text: no extension was negotiated, so RSV1 is a
	// protocol violation.
	_, err = c.Write(maskedFrame(0xC1, []byte(`{}`)))
	require.NoError(t, err)
	derr := <-disconnected
	assert.ErrorIs(t, derr, ErrDisconnected)
	assert.Contains(t, derr.Error(), "protocol error")
	var closed *PeerClosedError
	assert.False(t, errors.As(derr, &closed))
}
