package extbridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// readClose reads until the hub closes the raw connection and returns the
// close status (-1 when the connection dropped without one).
func readClose(t *testing.T, ws *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		_, _, err := ws.Read(t.Context())
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestHandshakeRefusals(t *testing.T) {
	tests := []struct {
		name  string
		first func(ctx context.Context, ws *websocket.Conn) error
		code  websocket.StatusCode
	}{
		{"wrong token", sendText(`{"type":"browser_hello","token":"nope","extension_version":"1"}`), websocket.StatusPolicyViolation},
		{"empty token", sendText(`{"type":"browser_hello","token":""}`), websocket.StatusPolicyViolation},
		{"not a hello", sendText(`{"type":"list_conversations"}`), websocket.StatusPolicyViolation},
		{"json ping first", sendText(`{"type":"ping"}`), websocket.StatusPolicyViolation},
		{"garbage", sendText(`not json`), websocket.StatusPolicyViolation},
		{"binary hello", func(ctx context.Context, ws *websocket.Conn) error {
			return ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"browser_hello","token":"`+testToken+`"}`))
		}, websocket.StatusPolicyViolation},
		// encoding/json would let the last, case-variant key win.
		{"duplicate token key", sendText(`{"type":"browser_hello","token":"bad","token":"` + testToken + `"}`), websocket.StatusPolicyViolation},
		{"case-variant token key", sendText(`{"type":"browser_hello","token":"bad","Token":"` + testToken + `"}`), websocket.StatusPolicyViolation},
		{"case-variant only", sendText(`{"type":"browser_hello","TOKEN":"` + testToken + `"}`), websocket.StatusPolicyViolation},
		{"hello timeout", func(context.Context, *websocket.Conn) error { return nil }, websocket.StatusPolicyViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{})
				ws, _, err := e.dialRaw(extbridgetest.Options{})
				require.NoError(t, err)
				defer ws.CloseNow()
				start := time.Now()
				require.NoError(t, tt.first(t.Context(), ws))
				assert.Equal(t, tt.code, readClose(t, ws))
				if tt.name == "hello timeout" {
					assert.Equal(t, DefaultHelloTimeout, time.Since(start))
				} else {
					assert.Less(t, time.Since(start), DefaultHelloTimeout)
				}
				assert.False(t, e.hub.Connected())
			})
		})
	}
}

// TestOversizedBeforeHello uses real sockets: net.Pipe has no buffer, so the
// hub's close frame could not pass the client's unfinished oversized write.
func TestOversizedBeforeHello(t *testing.T) {
	e := newTCPEnv(t, HubOptions{})
	ws, _, err := extbridgetest.DialRaw(t.Context(), e.url, nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	big := `{"type":"browser_hello","pad":"` + strings.Repeat("x", DefaultPreHelloReadLimit) + `"}`
	require.NoError(t, ws.Write(t.Context(), websocket.MessageText, []byte(big)))
	assert.Equal(t, websocket.StatusMessageTooBig, readClose(t, ws))
	assert.False(t, e.hub.Connected())
}

func sendText(s string) func(context.Context, *websocket.Conn) error {
	return func(ctx context.Context, ws *websocket.Conn) error {
		return ws.Write(ctx, websocket.MessageText, []byte(s))
	}
}

func TestHelloAckThenMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ws, _, err := e.dialRaw(extbridgetest.Options{})
		require.NoError(t, err)
		defer ws.CloseNow()
		require.NoError(t, sendText(`{"type":"browser_hello","token":"`+testToken+`","extension_version":"1.9.2\u0000\n"}`)(t.Context(), ws))
		_, ack, err := ws.Read(t.Context())
		require.NoError(t, err)
		assert.JSONEq(t, `{"type":"browser_hello_ack"}`, string(ack))
		_, mode, err := ws.Read(t.Context())
		require.NoError(t, err)
		assert.JSONEq(t, `{"type":"mode","mode":"standard"}`, string(mode))
		info, ok := e.hub.Extension()
		require.True(t, ok)
		assert.Equal(t, "1.9.2", info.Version, "control characters are dropped")
		assert.Equal(t, extbridgetest.DefaultOrigin, info.Origin)
	})
}

func TestOrigins(t *testing.T) {
	const chromeID = "abcdefghijklmnopabcdefghijklmnop"
	tests := []struct {
		name    string
		origins []string // nil: no Origin header
		opts    HubOptions
		allowed bool
	}{
		{"no origin", nil, HubOptions{}, true},
		{"chrome", []string{"chrome-extension://" + chromeID}, HubOptions{}, true},
		{"firefox", []string{"moz-extension://0b5a3c9e-44a4-4c36-b1c4-8d0b4b1b5b1e"}, HubOptions{}, true},
		{"safari", []string{"safari-web-extension://ABCD-1234"}, HubOptions{}, true},
		{"pinned id", []string{"chrome-extension://" + chromeID}, HubOptions{ExtensionIDs: []string{chromeID}}, true},
		{"other id when pinned", []string{"chrome-extension://pppppppppppppppppppppppppppppppp"}, HubOptions{ExtensionIDs: []string{chromeID}}, false},
		{"https page", []string{"https://evil.example"}, HubOptions{}, false},
		{"http localhost page", []string{"http://127.0.0.1:52789"}, HubOptions{}, false},
		{"null", []string{"null"}, HubOptions{}, false},
		{"scheme without id", []string{"chrome-extension://"}, HubOptions{}, false},
		{"id with path", []string{"chrome-extension://" + chromeID + "/x"}, HubOptions{}, false},
		{"two origins", []string{"chrome-extension://" + chromeID, "https://evil.example"}, HubOptions{}, false},
		{"no origin when required", nil, HubOptions{RequireOrigin: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHub(testToken, &HubOptions{ExtensionIDs: tt.opts.ExtensionIDs, RequireOrigin: tt.opts.RequireOrigin})
			require.NoError(t, err)
			defer h.Close()
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:52789/ws", nil)
			r.RemoteAddr = "127.0.0.1:40000"
			for _, o := range tt.origins {
				r.Header.Add("Origin", o)
			}
			// Not an upgrade request: an allowed origin gets past the
			// origin check and fails the WebSocket handshake instead.
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tt.allowed {
				assert.Equal(t, http.StatusUpgradeRequired, w.Code)
			} else {
				assert.Equal(t, http.StatusForbidden, w.Code)
			}
		})
	}
}

func TestOriginRefusedBeforeUpgrade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		_, resp, err := e.dialRaw(extbridgetest.Options{Origin: "https://evil.example"})
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

func TestLoopbackOnly(t *testing.T) {
	h, err := NewHub(testToken, &HubOptions{ArtifactsDir: t.TempDir()})
	require.NoError(t, err)
	defer h.Close()
	tests := []struct {
		name, remote, host, path string
	}{
		{"remote peer ws", "192.0.2.1:5555", "127.0.0.1:52789", "/ws"},
		{"remote peer artifacts", "192.0.2.1:5555", "127.0.0.1:52789", "/artifacts/a.png"},
		{"rebinding host ws", "127.0.0.1:5555", "evil.example:52789", "/ws"},
		{"rebinding host artifacts", "127.0.0.1:5555", "evil.example", "/artifacts/a.png"},
		{"unparsable remote", "pipe", "127.0.0.1", "/ws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://x"+tt.path, nil)
			r.RemoteAddr, r.Host = tt.remote, tt.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, http.StatusForbidden, w.Code)
		})
	}
}

func TestNewcomerWithoutHelloDoesNotDisturb(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := extbridgetest.NewBrowser()
		current := e.dial(extbridgetest.Options{Browser: b})

		newcomer, _, err := e.dialRaw(extbridgetest.Options{})
		require.NoError(t, err)
		defer newcomer.CloseNow()
		closed := make(chan websocket.StatusCode, 1)
		go func() { closed <- readClose(t, newcomer) }()

		// While the newcomer is silent, the current connection works.
		_, err = e.hub.Navigate(t.Context(), "https://a.example/")
		require.NoError(t, err)
		time.Sleep(DefaultHelloTimeout + time.Second)
		assert.Equal(t, websocket.StatusPolicyViolation, <-closed)
		assert.True(t, e.hub.Connected())
		res, err := e.hub.Navigate(t.Context(), "https://b.example/")
		require.NoError(t, err)
		assert.Equal(t, "https://b.example/", res.URL)
		select {
		case <-current.Done():
			t.Fatal("current connection was closed")
		default:
		}
	})
}

func TestWrongTokenNewcomerDoesNotDisturb(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		e.dial(extbridgetest.Options{Browser: extbridgetest.NewBrowser()})
		_, err := e.connect(extbridgetest.Options{Token: "wrong"})
		require.Error(t, err)
		_, err = e.hub.Tabs(t.Context())
		assert.NoError(t, err)
	})
}

func TestReplacementFailsInFlightCommandsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		e := newEnv(t, HubOptions{
			OnConnect: func(ci ConnInfo) {
				mu.Lock()
				events = append(events, "connect "+ci.Version)
				mu.Unlock()
			},
			OnDisconnect: func(ci ConnInfo, err error) {
				mu.Lock()
				events = append(events, "disconnect "+ci.Version)
				mu.Unlock()
				assert.ErrorIs(t, err, ErrDisconnected)
			},
		})
		first := e.dial(extbridgetest.Options{Version: "1"}) // never answers

		const n = 50
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := e.hub.Navigate(t.Context(), "https://slow.example/")
				errs <- err
			}()
		}
		for range n {
			_, err := first.NextCommand(t.Context())
			require.NoError(t, err)
		}
		start := time.Now()
		second := e.dial(extbridgetest.Options{Browser: extbridgetest.NewBrowser(), Version: "2"})
		for range n {
			err := <-errs
			assert.ErrorIs(t, err, ErrDisconnected)
		}
		assert.Zero(t, time.Since(start), "in-flight commands must fail at once, not time out")

		<-first.Done()
		assert.Equal(t, websocket.StatusNormalClosure, first.CloseStatus())
		info, ok := e.hub.Extension()
		require.True(t, ok)
		assert.Equal(t, "2", info.Version)
		_, err := e.hub.Tabs(t.Context())
		require.NoError(t, err)
		select {
		case <-second.Done():
			t.Fatal("the new connection was closed")
		default:
		}
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, []string{"connect 1", "disconnect 1", "connect 2"}, events)
		mu.Unlock()
	})
}

func TestWaitConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, e.hub.WaitConnected(ctx), context.DeadlineExceeded)

		done := make(chan error, 1)
		go func() { done <- e.hub.WaitConnected(t.Context()) }()
		synctest.Wait()
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, <-done)

		ext.Close()
		synctest.Wait()
		assert.False(t, e.hub.Connected())
		_, err := e.hub.Navigate(t.Context(), "https://x.example/")
		assert.ErrorIs(t, err, ErrNotConnected)
	})
}

func TestDisconnectFailsCommandsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		errc, _ := readInFlight(t, e, ext)
		start := time.Now()
		ext.Close()
		err := <-errc
		assert.ErrorIs(t, err, ErrDisconnected)
		assert.False(t, errors.Is(err, ErrTimeout))
		assert.Zero(t, time.Since(start))
	})
}

// TestReplacedConnectionFramesIgnored checks that once a connection has been
// replaced, frames it still sends (before its socket is gone) are not acted
// on: no tool runs, no message reaches the backend, no approval is answered.
func TestReplacedConnectionFramesIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &recordingBackend{}
		var toolCalls atomic.Int32
		e := newEnv(t, HubOptions{Backend: b, Tools: ToolHandlerFunc(func(context.Context, *ToolRequest) (*ToolResponse, error) {
			toolCalls.Add(1)
			return &ToolResponse{Success: true}, nil
		})})
		// The old connection stops reading, so that its socket stays open
		// (until the write timeout) while it keeps sending.
		old, err := e.connect(extbridgetest.Options{Stalled: true})
		require.NoError(t, err)
		defer old.Close()
		out := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "a1", ToolName: "Bash"})
		synctest.Wait()

		current := e.dial(extbridgetest.Options{})
		assert.Equal(t, "approval_request", next(t, current).Type)
		for _, f := range []string{
			`{"type":"tool_request","id":"t1","tool_name":"Bash","tool_args":"{}"}`,
			`{"type":"user_message","content":"from the replaced panel"}`,
			`{"type":"approval_response","request_id":"a1","action":"approve"}`,
		} {
			require.NoError(t, old.SendRaw(t.Context(), []byte(f)))
		}
		synctest.Wait()
		assert.Zero(t, toolCalls.Load(), "no tool runs for a replaced connection")
		b.mu.Lock()
		assert.Empty(t, b.messages, "no user message from a replaced connection")
		b.mu.Unlock()
		assert.Len(t, e.hub.PendingApprovals(), 1, "a replaced connection cannot answer approvals")
		require.NoError(t, current.SendRaw(t.Context(), []byte(`{"type":"approval_response","request_id":"a1","action":"reject"}`)))
		assert.Equal(t, Rejected, (<-out).d)
	})
}
