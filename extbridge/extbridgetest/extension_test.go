package extbridgetest_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "0123456789abcdef0123456789abcdef"

func newHub(t *testing.T, opts extbridge.HubOptions) *extbridge.Hub {
	t.Helper()
	h, err := extbridge.NewHub(token, &opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Close()) })
	return h
}

func connect(t *testing.T, h *extbridge.Hub, o extbridgetest.Options) *extbridgetest.Extension {
	t.Helper()
	o.Token = token
	ext, err := extbridgetest.Connect(t.Context(), h, &o)
	require.NoError(t, err)
	t.Cleanup(func() { ext.Close() })
	return ext
}

func TestQueueAndReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		ext := connect(t, h, extbridgetest.Options{})
		f, err := ext.Next(t.Context())
		require.NoError(t, err)
		assert.Equal(t, `{"type":"mode","mode":"standard"}`, string(f.Raw))

		for i := range 3 {
			require.NoError(t, h.Emit(t.Context(), extbridge.TextMessageContent("m", strconv.Itoa(i))))
		}
		// The reply to a request is routed to it; the queued events stay
		// queued, in order.
		skills, err := ext.Request(t.Context(), "list_skills", "skills")
		require.NoError(t, err)
		assert.Equal(t, `{"type":"skills","skills":[]}`, string(skills.Raw))
		for i := range 3 {
			f, err := ext.Next(t.Context())
			require.NoError(t, err)
			assert.JSONEq(t, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"`+strconv.Itoa(i)+`"}`, string(f.Event()))
		}
		var types []string
		for _, f := range ext.Received() {
			types = append(types, f.Type)
		}
		assert.Equal(t, []string{"mode", "chat_event", "chat_event", "chat_event", "skills"}, types)
	})
}

func TestBrowserAndQueuedCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		b := extbridgetest.NewBrowser()
		b.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop", Text: map[string]string{"": "Welcome"}})
		connect(t, h, extbridgetest.Options{Browser: b})
		_, err := h.Navigate(t.Context(), "https://shop.example/")
		require.NoError(t, err)
		res, err := h.Read(t.Context(), "")
		require.NoError(t, err)
		assert.Equal(t, "Welcome", res.Content)
		_, err = h.Click(t.Context(), "#buy")
		require.NoError(t, err)
		_, err = h.Type(t.Context(), "#q", "socks", nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"#buy"}, b.Clicks())
		assert.Equal(t, "socks", b.Value("#q"))
		_, err = h.Read(t.Context(), "#missing")
		var ce *extbridge.CommandError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "no element matches selector #missing", ce.Message)

		// Without a handler, commands are queued and answered by hand.
		other := connect(t, h, extbridgetest.Options{}) // replaces the first
		errc := make(chan error, 1)
		go func() {
			_, err := h.Tabs(t.Context())
			errc <- err
		}()
		cmd, err := other.NextCommand(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "tabs", cmd.Action)
		require.NoError(t, other.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Tabs: []extbridgetest.Tab{{URL: "https://a/"}}}))
		assert.NoError(t, <-errc)
	})
}

func TestApprovals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		connect(t, h, extbridgetest.Options{Approvals: extbridgetest.ApprovalHandlerFunc(func(_ context.Context, r *extbridgetest.ApprovalRequest) string {
			if r.ToolName == "Ask" {
				return "" // left to the test
			}
			return "reject"
		})})
		d, err := h.RequestApproval(t.Context(), extbridge.ApprovalRequest{ToolName: "Bash"})
		require.NoError(t, err)
		assert.Equal(t, extbridge.Rejected, d)
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		ext := connect(t, h, extbridgetest.Options{Approvals: extbridgetest.ApprovalHandlerFunc(func(context.Context, *extbridgetest.ApprovalRequest) string { return "" })})
		out := make(chan extbridge.Decision, 1)
		go func() {
			d, _ := h.RequestApproval(t.Context(), extbridge.ApprovalRequest{ID: "r1", ToolName: "Ask"})
			out <- d
		}()
		f, err := ext.NextOfType(t.Context(), "approval_request")
		require.NoError(t, err)
		var req extbridgetest.ApprovalRequest
		require.NoError(t, f.Decode(&req))
		assert.Equal(t, "r1", req.RequestID)
		require.NoError(t, ext.Approve(t.Context(), "r1", "approve"))
		assert.Equal(t, extbridge.Approved, <-out)
	})
}

func TestCallToolAndUserMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan extbridge.UserMessage, 1)
		h := newHub(t, extbridge.HubOptions{
			Backend: messages{got: got},
			Tools: extbridge.ToolHandlerFunc(func(_ context.Context, r *extbridge.ToolRequest) (*extbridge.ToolResponse, error) {
				if r.ToolName != "Echo" {
					return nil, extbridge.ErrUnknownTool
				}
				return &extbridge.ToolResponse{Success: true, Output: r.ToolArgs}, nil
			}),
		})
		ext := connect(t, h, extbridgetest.Options{})
		r, err := ext.CallTool(t.Context(), "Echo", "hi")
		require.NoError(t, err)
		assert.True(t, r.Success)
		assert.Equal(t, "hi", r.Output)
		r, err = ext.CallTool(t.Context(), "Nope", "")
		require.NoError(t, err)
		assert.False(t, r.Success)
		assert.Equal(t, `unknown tool "Nope"`, r.Error)

		require.NoError(t, ext.UserMessage(t.Context(), "", json.RawMessage(`{"type":"image"}`)))
		m := <-got
		assert.Equal(t, []json.RawMessage{json.RawMessage(`{"type":"image"}`)}, m.Attachments)
	})
}

// messages is a Backend that hands user messages to the test.
type messages struct {
	extbridge.BaseBackend
	got chan extbridge.UserMessage
}

func (m messages) UserMessage(_ context.Context, msg extbridge.UserMessage, _ *extbridge.Reply) error {
	m.got <- msg
	return nil
}

func TestRefusedHello(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		_, err := extbridgetest.Connect(t.Context(), h, &extbridgetest.Options{Token: "wrong"})
		require.Error(t, err)
		assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err))
	})
}

// TestFakeClock: over a Listener made in a synctest bubble, the hub's hello
// timeout and pings follow the fake clock.
func TestFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		l := extbridgetest.NewListener()
		served := make(chan error, 1)
		go func() { served <- h.Serve(l) }()
		defer func() {
			require.NoError(t, h.Close())
			assert.ErrorIs(t, <-served, extbridge.ErrServerClosed)
		}()

		ws, _, err := extbridgetest.DialRaw(t.Context(), l.URL(), &extbridgetest.Options{HTTPClient: l.HTTPClient()})
		require.NoError(t, err)
		defer ws.CloseNow()
		start := time.Now()
		_, _, err = ws.Read(t.Context())
		assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err))
		assert.Equal(t, extbridge.DefaultHelloTimeout, time.Since(start))

		var pings atomic.Int32
		ext, err := extbridgetest.Dial(t.Context(), l.URL(), &extbridgetest.Options{Token: token, HTTPClient: l.HTTPClient(), OnPing: func() { pings.Add(1) }})
		require.NoError(t, err)
		defer ext.Close()
		time.Sleep(extbridge.DefaultPingInterval*3 + time.Second)
		assert.Equal(t, int32(3), pings.Load())
	})
}

func TestClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, extbridge.HubOptions{})
		ext := connect(t, h, extbridgetest.Options{})
		require.NoError(t, h.Close())
		<-ext.Done()
		// Close ends each connection with 1001 and drops its socket at
		// once: the close frame arrives or the socket is gone first.
		assert.Contains(t, []websocket.StatusCode{-1, websocket.StatusGoingAway}, ext.CloseStatus(), "Close drops the socket, saying going away when it can")
		for {
			if _, err := ext.Next(t.Context()); err != nil {
				assert.ErrorIs(t, err, extbridgetest.ErrClosed)
				break
			}
		}
		_, err := ext.Request(t.Context(), "list_models", "models")
		assert.ErrorIs(t, err, extbridgetest.ErrClosed)
		assert.NoError(t, ext.Close())
		assert.NoError(t, ext.Close(), "idempotent")
	})
}

func TestOverLoopback(t *testing.T) {
	h := newHub(t, extbridge.HubOptions{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- h.Serve(l) }()
	ext, err := extbridgetest.Dial(t.Context(), "ws://"+l.Addr().String()+"/ws", &extbridgetest.Options{Token: token, Browser: extbridgetest.NewBrowser()})
	require.NoError(t, err)
	defer ext.Close()
	tabs, err := h.Tabs(t.Context())
	require.NoError(t, err)
	assert.Len(t, tabs, 1)
	require.NoError(t, h.Close())
	assert.ErrorIs(t, <-served, extbridge.ErrServerClosed)
}
