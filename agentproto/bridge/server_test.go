package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawAgent speaks frames on a raw connection to a server, to test the wire
// exactly as agents see it.
type rawAgent struct {
	conn *nativemsg.Conn
}

func dialRaw(t *testing.T, b *agentprototest.Bridge) *rawAgent {
	t.Helper()
	nc, err := b.Listener.Dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawAgent{conn: nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{ReadLimit: 1 << 26, WriteLimit: 1 << 26})}
}

func (a *rawAgent) recv(t *testing.T) string {
	t.Helper()
	body, err := a.conn.ReadMessage(nil)
	require.NoError(t, err)
	return string(body)
}

// roundTrip sends one frame and returns the next frame that is not an event.
func (a *rawAgent) roundTrip(t *testing.T, frame string) string {
	t.Helper()
	go a.conn.WriteMessage([]byte(frame)) // net.Pipe writes wait for the reader
	for {
		got := a.recv(t)
		var probe struct{ Kind string }
		json.Unmarshal([]byte(got), &probe)
		if probe.Kind != "event" {
			return got
		}
	}
}

// newSyncBridge starts a bridge whose requests the test answers, inside a
// synctest bubble, and waits until the extension is online.
func newSyncBridge(t *testing.T) *agentprototest.Bridge {
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Manual: true})
	t.Cleanup(func() { b.Close() })
	synctest.Wait()
	require.True(t, b.Host.Online())
	return b
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name  string
		opts  bridge.ServerOptions
		frame string
		want  string
	}{
		{"token unset and not allowed", bridge.ServerOptions{}, `{"id":"a","type":"bridge.health"}`,
			`{"id":"a","error":"WEBOPERATOR_API_TOKEN is required unless WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1"}`},
		{"token unset, unauthenticated allowed", bridge.ServerOptions{AllowUnauthenticated: true}, `{"id":"a","type":"bridge.health"}`,
			`{"id":"a","result":{"ok":true,"bridge":"online","extension":"online","authRequired":false}}`},
		{"missing token", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"wrong token", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","token":"s3cres"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"token prefix", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","token":"s3c"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"case-variant key carries no token", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","Token":"s3cret"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"non-string token is no token", bridge.ServerOptions{Token: "123"}, `{"id":"a","type":"bridge.health","token":123}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"right token", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","token":"s3cret"}`,
			`{"id":"a","result":{"ok":true,"bridge":"online","extension":"online","authRequired":true}}`},
		{"escaped token", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","token":"s3\u0063ret"}`,
			`{"id":"a","result":{"ok":true,"bridge":"online","extension":"online","authRequired":true}}`},
		// A lone surrogate escape is not U+FFFD: JavaScript's === tells
		// them apart, and so does the server.
		{"lone surrogate escape is not U+FFFD", bridge.ServerOptions{Token: "s3\uFFFDret"}, `{"id":"a","type":"bridge.health","token":"s3\ud800ret"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"U+FFFD escaped", bridge.ServerOptions{Token: "s3\uFFFDret"}, `{"id":"a","type":"bridge.health","token":"s3\ufffdret"}`,
			`{"id":"a","result":{"ok":true,"bridge":"online","extension":"online","authRequired":true}}`},
		{"token needed even when unauthenticated is allowed", bridge.ServerOptions{Token: "s3cret", AllowUnauthenticated: true}, `{"id":"a","type":"browser.click"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"auth before unknown types", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"no.such"}`,
			`{"id":"a","error":"Missing or invalid WebOperator API token"}`},
		{"duplicate token refused", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","token":"x","token":"s3cret"}`,
			`{"id":"a","error":"duplicate \"token\" member in request"}`},
		{"duplicate type refused with the id that follows", bridge.ServerOptions{Token: "s3cret"}, `{"type":"bridge.health","type":"x","token":"s3cret","id":7}`,
			`{"id":7,"error":"duplicate \"type\" member in request"}`},
		{"duplicate id refused without an id", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","type":"bridge.health","id":"b","token":"s3cret"}`,
			`{"error":"duplicate \"id\" member in request"}`},
		{"syntax error after a duplicate", bridge.ServerOptions{Token: "s3cret"}, `{"id":"a","token":"x","token":"s3cret",}`,
			`{"error":"invalid character '}' looking for beginning of object key string"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBridge(t, &agentprototest.BridgeOptions{Server: tt.opts})
			if tt.opts.Token == "" && !tt.opts.AllowUnauthenticated {
				// NewBridge allows unauthenticated use when no token is
				// set; this case needs a server without.
				b = strictBridge(t)
			}
			a := dialRaw(t, b)
			assert.Equal(t, tt.want, a.roundTrip(t, tt.frame))
		})
	}
}

func TestEnvelope(t *testing.T) {
	b := newBridge(t, nil)
	a := dialRaw(t, b)
	tests := []struct {
		name, frame, want string
	}{
		{"string id echoed", `{"id":"req-1","type":"browser.click","payload":{"ref":"@e1"}}`, `{"id":"req-1","result":{"ref":"@e1"}}`},
		{"number id echoed as sent", `{"id":12.50,"type":"browser.click","payload":{}}`, `{"id":12.50,"result":{}}`},
		{"object id echoed", `{"id":{"n":[1,2]},"type":"browser.click","payload":{}}`, `{"id":{"n":[1,2]},"result":{}}`},
		{"missing payload is {}", `{"id":"p","type":"browser.click"}`, `{"id":"p","result":{}}`},
		{"array payload is {}", `{"id":"p","type":"browser.click","payload":[1]}`, `{"id":"p","result":{}}`},
		{"string payload is {}", `{"id":"p","type":"browser.click","payload":"x"}`, `{"id":"p","result":{}}`},
		{"payload bytes relayed unchanged", `{"id":"p","type":"browser.scroll","payload":{ "amountPx" : 1e2, "x":"\u00e9\n", "y":[ ] }}`,
			`{"id":"p","result":{ "amountPx" : 1e2, "x":"\u00e9\n", "y":[ ] }}`},
		// As through the reference bridge, whose JSON.parse keeps a lone
		// surrogate and whose JSON.stringify writes it back escaped.
		{"lone surrogate escapes relayed as sent", `{"id":"\ud800","type":"browser.type","payload":{"text":"cut \ud83d","k\udc00":1}}`,
			`{"id":"\ud800","result":{"text":"cut \ud83d","k\udc00":1}}`},
		{"invalid JSON answered without id", `{"id":"p","type":`, `{"error":"unexpected end of JSON input"}`},
		{"not an object", `[1,2]`, `{"error":"JSON value is not an object"}`},
		{"missing type", `{"id":"t"}`, `{"id":"t","error":"Invalid request: type must be a non-empty string"}`},
		{"non-string type", `{"id":"t","type":7}`, `{"id":"t","error":"Invalid request: type must be a non-empty string"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, a.roundTrip(t, tt.frame))
		})
	}
	t.Run("the connection survives invalid JSON", func(t *testing.T) {
		a.roundTrip(t, `not json`)
		assert.Equal(t, `{"id":"after","result":{}}`, a.roundTrip(t, `{"id":"after","type":"browser.click"}`))
	})
}

func TestGeneratedIDs(t *testing.T) {
	b := newBridge(t, nil)
	a := dialRaw(t, b)
	seen := map[string]bool{}
	for _, frame := range []string{`{"type":"browser.click"}`, `{"id":"","type":"browser.click"}`, `{"id":null,"type":"bridge.health"}`} {
		var resp struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(a.roundTrip(t, frame)), &resp))
		var id string
		require.NoError(t, json.Unmarshal(resp.ID, &id), "generated ids are strings")
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
		assert.False(t, seen[id], "ids are unique")
		seen[id] = true
	}
}

func TestHealthAnsweredLocally(t *testing.T) {
	b := newBridge(t, nil)
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	h, err := c.Health(t.Context())
	require.NoError(t, err)
	assert.Equal(t, &agentproto.HealthResult{OK: true, Bridge: "online", Extension: "online", AuthRequired: false}, h)
	assert.Zero(t, b.Extension.Received(), "bridge.health never reaches the extension")
}

func TestUnknownTypeForwarded(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.Mux{}}})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	err = c.Call(t.Context(), "browser.fly", nil, nil)
	var re *agentproto.RemoteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "Unknown bridge request: browser.fly", re.Message)
	assert.ErrorIs(t, err, agentproto.ErrUnknownRequest)
}

func TestExtensionOffline(t *testing.T) {
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{NoHello: true, Handler: agentprototest.Echo}})
	defer b.Close()
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	h, err := c.Health(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "offline", h.Extension, "no hello yet")

	err = c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil)
	var re *agentproto.RemoteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "WebOperator extension is not connected to the bridge", re.Message)
	assert.ErrorIs(t, err, agentproto.ErrExtensionOffline)

	require.NoError(t, b.Extension.Hello())
	require.NoError(t, b.WaitOnline(t.Context()))
	require.NoError(t, c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil), "online after bridge:hello")
}

func TestErrorReplyIsRemoteError(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(context.Context, *agentprototest.Request) (any, error) {
			return nil, fmt.Errorf("No tab with id: 9")
		})}})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	err = c.Call(t.Context(), agentproto.TypeClick, agentproto.ClickParams{Ref: "@e1", TabID: 9}, nil)
	assert.Equal(t, &agentproto.RemoteError{Message: "No tab with id: 9"}, err)
}

func TestActionFailureIsAResult(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(context.Context, *agentprototest.Request) (any, error) {
			return json.RawMessage(`{"kind":"action:result","result":{"ok":false,"error":"Element @e9 not found","durationMs":3}}`), nil
		})}})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Click(t.Context(), agentproto.ClickParams{Ref: "@e9"})
	require.NoError(t, err)
	assert.False(t, res.OK())
	assert.Equal(t, "Element @e9 not found", res.Result.Error)
}

func TestEmptyResponseIsNullResult(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			r.ReplyEmpty()
			return nil, agentprototest.ErrNoReply
		})}})
	a := dialRaw(t, b)
	assert.Equal(t, `{"id":"x","result":null}`, a.roundTrip(t, `{"id":"x","type":"tasks.get","payload":{"id":"nope"}}`))
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	task, err := c.GetTask(t.Context(), "nope")
	assert.ErrorIs(t, err, agentproto.ErrNoTask, "a nil error means a usable task")
	assert.Nil(t, task)
}

func TestTimeoutUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		a := dialRaw(t, b)

		start := time.Now()
		go a.conn.WriteMessage([]byte(`{"id":"slow","type":"browser.navigate","payload":{"url":"https://example.com"},"timeoutMs":1500}`))
		req := <-b.Extension.Requests()
		got := a.recv(t)
		assert.Equal(t, `{"id":"slow","error":"Bridge request timed out: browser.navigate"}`, got)
		assert.Equal(t, 1500*time.Millisecond, time.Since(start))

		// A late answer is dropped; the link and the connection stay up.
		require.NoError(t, req.Reply(map[string]any{"ok": true}))
		synctest.Wait()
		assert.Zero(t, b.Host.Pending())

		start = time.Now()
		go a.conn.WriteMessage([]byte(`{"id":"default","type":"browser.click"}`))
		<-b.Extension.Requests()
		assert.Equal(t, `{"id":"default","error":"Bridge request timed out: browser.click"}`, a.recv(t))
		assert.Equal(t, 60*time.Second, time.Since(start), "timeoutMs missing means 60 s")
	})
}

func TestClientDeadlineBecomesTimeoutMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
		defer cancel()
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- c.Call(ctx, agentproto.TypeSnapshot, nil, nil) }()
		<-b.Extension.Requests()
		err = <-errc
		assert.ErrorIs(t, err, agentproto.ErrTimeout)
		var re *agentproto.RemoteError
		require.ErrorAs(t, err, &re, "the bridge's timeout arrives before the context's")
		assert.Equal(t, "Bridge request timed out: browser.snapshot", re.Message)
		assert.Equal(t, 7750*time.Millisecond, time.Since(start), "deadline less a 250 ms margin")
	})
}

func TestWaitTaskTimeoutAboveWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		done := make(chan *agentproto.Task, 1)
		go func() {
			task, err := c.WaitTask(t.Context(), agentproto.WaitParams{ID: "t1", TimeoutMs: 90_000})
			assert.NoError(t, err)
			done <- task
		}()
		req := <-b.Extension.Requests()
		assert.JSONEq(t, `{"id":"t1","timeoutMs":90000}`, string(req.Payload))
		time.Sleep(90 * time.Second) // the extension waits the whole wait
		require.NoError(t, req.Reply(map[string]any{"id": "t1", "status": "stopped"}))
		task := <-done
		assert.True(t, task.Status.Final(), "stopped is final")
	})
}

func TestOutOfOrderResponses(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Manual: true})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	const n = 20
	results := make(chan string, n)
	for i := range n {
		go func() {
			var res struct{ N int }
			err := c.Call(t.Context(), agentproto.TypeExtract, map[string]int{"n": i}, &res)
			if err != nil {
				results <- err.Error()
				return
			}
			results <- fmt.Sprint(i == res.N)
		}()
	}
	var reqs []*agentprototest.Request
	for range n {
		reqs = append(reqs, <-b.Extension.Requests())
	}
	for i := len(reqs) - 1; i >= 0; i-- { // answer in reverse order
		var p struct{ N int }
		require.NoError(t, json.Unmarshal(reqs[i].Payload, &p))
		require.NoError(t, reqs[i].Reply(map[string]int{"n": p.N}))
	}
	for range n {
		assert.Equal(t, "true", <-results)
	}
}

func TestHostIDsAreTheHostsOwn(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Manual: true})
	a := dialRaw(t, b)
	go a.conn.WriteMessage([]byte(`{"id":"agent-secret-id","type":"browser.click","payload":{}}`))
	req := <-b.Extension.Requests()
	assert.NotEqual(t, "agent-secret-id", req.ID)
	assert.NotEmpty(t, req.ID)
	require.NoError(t, req.Reply(true))
	assert.Equal(t, `{"id":"agent-secret-id","result":true}`, a.recv(t))
}

func TestEventsGoToEveryClient(t *testing.T) {
	b := newBridge(t, nil)
	var subs []*agentproto.Subscription
	for range 3 {
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Health(t.Context()) // the connection is being served
		require.NoError(t, err)
		subs = append(subs, c.Subscribe(nil))
	}
	event := json.RawMessage(`{"kind":"task:step","taskId":"t1","step":{"id":"s1","index":0,"status":"ok","startedAt":1,"extra":{"kept":true}}}`)
	require.NoError(t, b.Extension.Emit(event))
	for _, s := range subs {
		select {
		case e := <-s.Events():
			assert.Equal(t, agentproto.EventTaskStep, e.Kind)
			assert.Equal(t, string(event), string(e.Raw), "unknown fields survive")
			v, err := e.Decode()
			require.NoError(t, err)
			step := v.(*agentproto.TaskStepEvent)
			assert.Equal(t, "t1", step.TaskID)
			assert.Equal(t, agentproto.StepOK, step.Step.Status)
		case <-time.After(5 * time.Second):
			t.Fatal("event not delivered")
		}
	}
}

func TestEventWireShape(t *testing.T) {
	b := newBridge(t, nil)
	a := dialRaw(t, b)
	a.roundTrip(t, `{"id":"1","type":"bridge.health"}`) // served
	go b.Extension.Emit(json.RawMessage(`{"kind":"task:update","task":{"id":"t"}}`))
	assert.Equal(t, `{"kind":"event","event":{"kind":"task:update","task":{"id":"t"}}}`, a.recv(t))
}

func TestSubscriptionOverflowDropsOldest(t *testing.T) {
	b := newBridge(t, nil)
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Health(t.Context())
	require.NoError(t, err)
	sub := c.Subscribe(&agentproto.SubscribeOptions{Buffer: 2})
	for i := range 5 {
		require.NoError(t, b.Extension.Emit(map[string]any{"kind": "task:error", "taskId": "t", "error": fmt.Sprint(i)}))
	}
	_, err = c.Health(t.Context()) // the events before this reply are all in
	require.NoError(t, err)
	assert.Equal(t, uint64(3), sub.Dropped())
	var got []string
	for range 2 {
		v, err := (<-sub.Events()).Decode()
		require.NoError(t, err)
		got = append(got, v.(*agentproto.TaskErrorEvent).Error)
	}
	assert.Equal(t, []string{"3", "4"}, got, "the newest events are kept")
	sub.Close()
	_, open := <-sub.Events()
	assert.False(t, open)
}

func TestInFlightLimit(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Manual: true, Server: bridge.ServerOptions{MaxInFlight: 2}})
	a := dialRaw(t, b)
	for i := range 2 {
		go a.conn.WriteMessage(fmt.Appendf(nil, `{"id":%d,"type":"browser.click"}`, i))
		<-b.Extension.Requests()
	}
	assert.Equal(t, `{"id":"third","error":"Too many requests in flight on this connection; the limit is 2"}`,
		a.roundTrip(t, `{"id":"third","type":"browser.click"}`))
	assert.Contains(t, a.roundTrip(t, `{"id":"h","type":"bridge.health"}`), `"result"`, "health is not a request in flight")
}

func TestRequestTooLargeForChrome(t *testing.T) {
	b := newBridge(t, nil)
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	big := map[string]string{"text": strings.Repeat("x", nativemsg.DefaultWriteLimit)}
	err = c.Call(t.Context(), agentproto.TypeText, big, nil)
	assert.ErrorIs(t, err, agentproto.ErrRequestTooLarge)
	assert.ErrorContains(t, err, "Request too large for the extension link")
	assert.Zero(t, b.Extension.Received(), "nothing reached the extension")
	// The link and the connection stay up.
	var res json.RawMessage
	require.NoError(t, c.Call(t.Context(), agentproto.TypeText, map[string]string{"text": "small"}, &res))
	assert.JSONEq(t, `{"text":"small"}`, string(res))
}

func TestRequestFrameOverLimitClosesWithError(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{MaxRequestSize: 1024}})
	a := dialRaw(t, b)
	frame := `{"type":"browser.type","payload":{"text":"` + strings.Repeat("x", 1500) + `"}}`
	go a.conn.WriteMessage([]byte(frame))
	assert.Equal(t, fmt.Sprintf(`{"error":"Request frame of %d bytes exceeds the limit of 1024 bytes"}`, len(frame)), a.recv(t))
	_, err := a.conn.ReadMessage(nil)
	assert.Error(t, err, "the connection is closed")
}

func TestExtensionVanishesWith100InFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		const n = 100
		errs := make(chan error, n)
		for range n {
			go func() { errs <- c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil) }()
		}
		for range n {
			<-b.Extension.Requests()
		}
		start := time.Now()
		b.Extension.Vanish()
		for range n {
			err := <-errs
			assert.Equal(t, &agentproto.RemoteError{Message: "Extension native messaging stream closed"}, err)
		}
		assert.Zero(t, time.Since(start), "all fail at once, not by timeout")
		h, err := c.Health(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "offline", h.Extension)
		err = c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil)
		assert.ErrorIs(t, err, agentproto.ErrExtensionOffline)
	})
}

func TestAgentVanishesMidRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		a := dialRaw(t, b)
		go a.conn.WriteMessage([]byte(`{"id":"gone","type":"tasks.wait","payload":{"id":"t"}}`))
		req := <-b.Extension.Requests()
		a.conn.Close()
		synctest.Wait()
		assert.Zero(t, b.Host.Pending(), "the abandoned request is forgotten")
		require.NoError(t, req.Reply(map[string]string{"id": "t"}), "a late answer hurts nothing")
		synctest.Wait()

		// Others are served as before.
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Health(t.Context())
		assert.NoError(t, err)
	})
}

func TestManyAgentsManyRequestsOutOfOrder(t *testing.T) {
	// The extension answers each request after a pseudo-random delay, so
	// answers come back in an order unrelated to the requests.
	b := newBridge(t, &agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(ctx context.Context, r *agentprototest.Request) (any, error) {
			var p struct{ Agent, N int }
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				return nil, err
			}
			select {
			case <-time.After(time.Duration((p.Agent*7919+p.N*104729)%997) * time.Microsecond):
			case <-ctx.Done():
			}
			return r.Payload, nil
		})}})
	const agents, perAgent, inFlight = 50, 200, 16 // 800 requests in flight at once
	var wg sync.WaitGroup
	failures := make(chan string, agents*perAgent)
	for agent := range agents {
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		callsInFlight(&wg, perAgent, inFlight, func(n int) {
			var res struct{ Agent, N int }
			if err := c.Call(t.Context(), agentproto.TypeExtract, map[string]int{"agent": agent, "n": n}, &res); err != nil {
				failures <- err.Error()
				return
			}
			if res.Agent != agent || res.N != n {
				failures <- fmt.Sprintf("agent %d request %d got agent %d request %d", agent, n, res.Agent, res.N)
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	assert.Equal(t, agents*perAgent, b.Extension.Received(), "each request reached the extension once")
	assert.Zero(t, b.Host.Pending())
}

func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{MaxQueuedBytes: 64 << 10}})
	// A client that sends one request and never reads.
	stuck := dialRaw(t, b)
	require.NoError(t, stuck.conn.WriteMessage([]byte(`{"id":1,"type":"bridge.health"}`)))
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Health(t.Context())
	require.NoError(t, err)
	big := map[string]string{"kind": "task:error", "error": strings.Repeat("e", 8000)}
	sub := c.Subscribe(nil)
	for range 40 { // 320 KB of events: more than the stuck client may queue
		require.NoError(t, b.Extension.Emit(big))
		select {
		case <-sub.Events():
		case <-time.After(5 * time.Second):
			t.Fatal("a client that does not read held the others up")
		}
	}
	_, err = c.Health(t.Context())
	assert.NoError(t, err)
	// The stuck client was disconnected: after what was written before
	// its queue overflowed, its stream ends.
	for {
		if _, err := stuck.conn.ReadMessage(nil); err != nil {
			break
		}
	}
}

func TestClientLosesConnection(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Manual: true})
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	defer c.Close()
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil) }()
	<-b.Extension.Requests()
	sub := c.Subscribe(nil)
	b.Server.Close()
	err = <-errc
	assert.ErrorIs(t, err, agentproto.ErrClosed)
	_, open := <-sub.Events()
	assert.False(t, open, "subscriptions end with the connection")
	assert.ErrorIs(t, c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil), agentproto.ErrClosed)
}

func TestCloseIsIdempotent(t *testing.T) {
	b := newBridge(t, nil)
	c, err := b.Dial(t.Context(), nil)
	require.NoError(t, err)
	assert.NoError(t, c.Close())
	assert.NoError(t, c.Close())
	assert.ErrorIs(t, c.Call(t.Context(), agentproto.TypeHealth, nil, nil), agentproto.ErrClosed)
	assert.NoError(t, b.Server.Close())
	assert.NoError(t, b.Server.Close())
}

func TestServeAfterCloseReturnsErrServerClosed(t *testing.T) {
	srv := bridge.NewServer(&bridge.ServerOptions{})
	srv.Close()
	assert.ErrorIs(t, srv.Serve(agentprototest.NewListener()), bridge.ErrServerClosed)
}

func TestShutdownDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		errc := make(chan error, 1)
		var res json.RawMessage
		go func() { errc <- c.Call(t.Context(), agentproto.TypeSnapshot, nil, &res) }()
		req := <-b.Extension.Requests()
		shut := make(chan error, 1)
		go func() { shut <- b.Server.Shutdown(t.Context()) }()
		synctest.Wait()
		select {
		case <-shut:
			t.Fatal("Shutdown returned with a request in flight")
		default:
		}
		require.NoError(t, req.Reply(json.RawMessage(`{"done":true}`)))
		require.NoError(t, <-errc, "the request in flight is answered")
		assert.JSONEq(t, `{"done":true}`, string(res))
		assert.NoError(t, <-shut)
	})
}

func TestShutdownContextExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSyncBridge(t)
		c, err := b.Dial(t.Context(), nil)
		require.NoError(t, err)
		defer c.Close()
		go c.Call(t.Context(), agentproto.TypeSnapshot, nil, nil)
		<-b.Extension.Requests()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, b.Server.Shutdown(ctx), context.DeadlineExceeded)
	})
}

func TestExtensionFunc(t *testing.T) {
	srv := bridge.NewServer(&bridge.ServerOptions{AllowUnauthenticated: true,
		Extension: bridge.ExtensionFunc(func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error) {
			if typ == agentproto.TypeTasksWait {
				<-ctx.Done() // canceled by the timeout
				return nil, ctx.Err()
			}
			return json.RawMessage(`{"type":"` + typ + `"}`), nil
		})})
	c := agentproto.NewClient(serveInMemory(t, srv), nil)
	defer c.Close()
	var res struct{ Type string }
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, nil, &res))
	assert.Equal(t, agentproto.TypeClick, res.Type)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, c.Call(ctx, agentproto.TypeTasksWait, nil, nil), agentproto.ErrTimeout)
}

// serveInMemory serves srv on an in-memory listener until the test ends,
// and returns a connection to it.
func serveInMemory(t *testing.T, srv *bridge.Server) net.Conn {
	t.Helper()
	l := agentprototest.NewListener()
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(l) })
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	nc, err := l.Dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc
}

func TestMaxConnections(t *testing.T) {
	b := newBridge(t, &agentprototest.BridgeOptions{Server: bridge.ServerOptions{MaxConnections: 1}})
	first := dialRaw(t, b)
	first.roundTrip(t, `{"id":1,"type":"bridge.health"}`)
	second := dialRaw(t, b)
	assert.Equal(t, `{"error":"Too many connections to the bridge; the limit is 1"}`, second.recv(t))
}
