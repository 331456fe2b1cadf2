package extbridge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestNewHubOptions(t *testing.T) {
	tests := []struct {
		name  string
		token string
		opts  *HubOptions
		ok    bool
	}{
		{"defaults", testToken, &HubOptions{}, true},
		{"nil options", testToken, nil, true},
		{"shortest token", "0123456789abcdef", nil, true},
		{"empty token", "", nil, false},
		{"weak token", "0123456789abcde", nil, false},
		{"negative timeout", testToken, &HubOptions{HelloTimeout: -1}, false},
		{"negative limit", testToken, &HubOptions{ReadLimit: -1}, false},
		{"public address", testToken, &HubOptions{Addr: "0.0.0.0:52789"}, false},
		{"lan address", testToken, &HubOptions{Addr: "192.168.1.2:52789"}, false},
		{"no port", testToken, &HubOptions{Addr: "127.0.0.1"}, false},
		{"localhost", testToken, &HubOptions{Addr: "localhost:0"}, true},
		{"ipv6 loopback", testToken, &HubOptions{Addr: "[::1]:0"}, true},
		{"bad pinned id", testToken, &HubOptions{ExtensionIDs: []string{"../x"}}, false},
		{"missing artifacts dir", testToken, &HubOptions{ArtifactsDir: "/nonexistent/dir"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHub(tt.token, tt.opts)
			if !tt.ok {
				assert.Error(t, err)
				if len(tt.token) < 16 {
					assert.ErrorIs(t, err, ErrWeakToken)
				}
				return
			}
			require.NoError(t, err)
			assert.NoError(t, h.Close())
			assert.NoError(t, h.Close(), "Close is idempotent")
		})
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	assert.Regexp(t, `^[0-9a-f]{32}$`, a)
	assert.NotEqual(t, a, b)
}

func TestServeRefusesNonLoopbackListener(t *testing.T) {
	h, err := NewHub(testToken, nil)
	require.NoError(t, err)
	defer h.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fake := &addrListener{Listener: l, addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}}
	assert.Error(t, h.Serve(fake))
}

type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l *addrListener) Addr() net.Addr { return l.addr }

func TestListenAndServeAndAddr(t *testing.T) {
	h, err := NewHub(testToken, &HubOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- h.ListenAndServe() }()
	var addr net.Addr
	require.Eventually(t, func() bool { addr = h.Addr(); return addr != nil }, 5*time.Second, time.Millisecond)
	ext, err := extbridgetest.Dial(t.Context(), "ws://"+addr.String()+"/ws", &extbridgetest.Options{Token: testToken, Browser: extbridgetest.NewBrowser()})
	require.NoError(t, err)
	defer ext.Close()
	res, err := h.Navigate(t.Context(), "https://a.example/")
	require.NoError(t, err)
	assert.Equal(t, "https://a.example/", res.URL)
	_, port, _ := net.SplitHostPort(addr.String())
	require.NoError(t, ext.Close())
	require.Eventually(t, func() bool { return !h.Connected() }, 5*time.Second, time.Millisecond)
	_, err = h.Tabs(t.Context())
	assert.EqualError(t, err, "no browser extension connected on port "+port)
	require.NoError(t, h.Close())
	assert.ErrorIs(t, <-served, ErrServerClosed)
	assert.ErrorIs(t, h.ListenAndServe(), ErrServerClosed)
	assert.ErrorIs(t, h.WaitConnected(t.Context()), ErrClosed)
}

func TestShutdownDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		approval := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "pending"})
		assert.Equal(t, "approval_request", next(t, ext).Type)

		cmdErr, cmd := readInFlight(t, e, ext)

		shut := make(chan error, 1)
		go func() { shut <- e.hub.Shutdown(t.Context()) }()
		assert.ErrorIs(t, (<-approval).err, ErrClosed, "pending approvals fail at once")
		time.Sleep(time.Second)
		select {
		case <-shut:
			t.Fatal("Shutdown returned with a command in flight")
		default:
		}
		// New connections are refused while draining.
		_, _, err := e.dialRaw(extbridgetest.Options{})
		assert.Error(t, err)

		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "done"}))
		assert.NoError(t, <-cmdErr, "the in-flight command completed")
		assert.NoError(t, <-shut)
		<-ext.Done()
		assert.Equal(t, websocket.StatusGoingAway, ext.CloseStatus())
	})
}

func TestShutdownDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		cmdErr, _ := readInFlight(t, e, ext)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		assert.ErrorIs(t, e.hub.Shutdown(ctx), context.DeadlineExceeded)
		err := <-cmdErr
		assert.True(t, errors.Is(err, ErrDisconnected) || errors.Is(err, ErrClosed), err)
	})
}

func TestCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash})
		ext := e.dial(extbridgetest.Options{})
		sendTool(t, ext, "t", "Bash", `{"command":"sleep"}`)
		silent, _, err := e.dialRaw(extbridgetest.Options{})
		require.NoError(t, err)
		defer silent.CloseNow()
		synctest.Wait()
		start := time.Now()
		require.NoError(t, e.hub.Close())
		assert.Zero(t, time.Since(start), "Close does not wait out handshakes")
		<-ext.Done()
		_, _, err = silent.Read(t.Context())
		assert.Error(t, err, "the connection still in its handshake is closed too")
		_, _, err = e.dialRaw(extbridgetest.Options{})
		assert.Error(t, err, "no new connection after Close")
	})
}

// TestNotConnectedPortWhenMounted: a hub mounted on the program's own server
// names the port the extension actually reached, not HubOptions.Addr's.
func TestNotConnectedPortWhenMounted(t *testing.T) {
	h, err := NewHub(testToken, nil)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		require.NoError(t, h.Close())
		require.NoError(t, srv.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	}()
	ext, err := extbridgetest.Dial(t.Context(), "ws://"+l.Addr().String()+"/ws", &extbridgetest.Options{Token: testToken})
	require.NoError(t, err)
	require.NoError(t, ext.Close())
	require.Eventually(t, func() bool { return !h.Connected() }, 5*time.Second, time.Millisecond)
	_, err = h.Tabs(t.Context())
	assert.EqualError(t, err, "no browser extension connected on port "+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// Listen reports the bind error at once and makes Addr valid before Serve.
func TestListenThenServe(t *testing.T) {
	h, err := NewHub(testToken, &HubOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	l, err := h.Listen()
	require.NoError(t, err)
	require.NotNil(t, h.Addr(), "Addr is valid as soon as Listen returns")
	assert.Equal(t, l.Addr().String(), h.Addr().String())

	// A second hub on the same address learns the bind error from Listen.
	h2, err := NewHub(testToken, &HubOptions{Addr: h.Addr().String()})
	require.NoError(t, err)
	_, err = h2.Listen()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
	assert.Nil(t, h2.Addr())
	require.NoError(t, h2.Close())

	served := make(chan error, 1)
	go func() { served <- h.Serve(l) }()
	ext, err := extbridgetest.Dial(t.Context(), "ws://"+h.Addr().String()+"/ws", &extbridgetest.Options{Token: testToken, Browser: extbridgetest.NewBrowser()})
	require.NoError(t, err)
	defer ext.Close()
	_, err = h.Navigate(t.Context(), "https://a.example/")
	require.NoError(t, err)
	require.NoError(t, h.Close())
	assert.ErrorIs(t, <-served, ErrServerClosed)
}

// A listener from Listen that was never served is closed by Close.
func TestListenWithoutServeClosed(t *testing.T) {
	h, err := NewHub(testToken, &HubOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	l, err := h.Listen()
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, err = l.Accept()
	assert.ErrorIs(t, err, net.ErrClosed)
	_, err = h.Listen()
	assert.ErrorIs(t, err, ErrServerClosed)
}
