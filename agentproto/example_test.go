package agentproto_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
)

// A whole bridge in memory: the client talks to a server whose host
// forwards to a stand-in extension.
func Example() {
	ctx := context.Background()
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{
		Extension: agentprototest.Options{Handler: agentprototest.Mux{
			agentproto.TypeClick: agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
				return json.RawMessage(`{"kind":"action:result","result":{"ok":true,"durationMs":12}}`), nil
			}),
		}},
	})
	defer b.Close()
	b.WaitOnline(ctx)

	c, err := b.Dial(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	res, err := c.Click(ctx, agentproto.ClickParams{Ref: "@e12", Reason: "open details"})
	fmt.Println(res.OK(), res.Result.DurationMs, err)

	err = c.Call(ctx, "browser.fly", nil, nil)
	fmt.Println(err, errors.Is(err, agentproto.ErrUnknownRequest))
	// Output:
	// true 12 <nil>
	// Unknown bridge request: browser.fly true
}

// Error replies carry the bridge's exact string and match sentinels.
func ExampleRemoteError() {
	err := error(&agentproto.RemoteError{Message: "Bridge request timed out: browser.navigate"})
	fmt.Println(errors.Is(err, agentproto.ErrTimeout), errors.Is(err, agentproto.ErrStreamClosed))
	// Output: true false
}

// ParseRequest decodes a request as the server does: exact keys, defaults
// applied.
func ExampleParseRequest() {
	req, err := agentproto.ParseRequest([]byte(`{"id":7,"type":"browser.snapshot","Token":"x","payload":[]}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("id=%s type=%s payload=%s token=%q\n", req.ID, req.Type, req.Payload, req.Token)
	// Output: id=7 type=browser.snapshot payload={} token=""
}

func ExampleParseRef() {
	r, _ := agentproto.ParseRef("@f3e12")
	fmt.Println(r.Frame, r.Index, r)
	// Output: 3 12 @f3e12
}

func ExampleTaskStatus_Final() {
	for _, s := range []agentproto.TaskStatus{agentproto.StatusRunning, agentproto.StatusStopped, agentproto.StatusAwaitingConfirm} {
		fmt.Println(s, s.Final(), s.Settled())
	}
	// Output:
	// running false false
	// stopped true true
	// awaiting_confirm false true
}

// An agent: Dial the bridge the browser started, drive a tab, follow the
// extension's events. (Compiled, not run: it needs a live bridge.)
func ExampleDial() {
	ctx := context.Background()
	// WEBOPERATOR_AGENT_SOCKET and WEBOPERATOR_API_TOKEN, as the reference
	// client reads them (Dial itself reads no environment); a socket whose
	// server runs as another user is refused before the token is sent.
	c, err := agentproto.DialEnv(ctx, os.Getenv, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Navigate(ctx, agentproto.NavigateParams{URL: "https://example.com"}); err != nil {
		log.Fatal(err) // errors.Is(err, agentproto.ErrExtensionOffline), ErrTimeout, ErrStreamClosed, …
	}
	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{}) // nodes with @eN refs
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Click(ctx, agentproto.ClickParams{Ref: snap.Nodes[0].Ref})
	if err != nil {
		log.Fatal(err)
	}
	if !res.OK() {
		fmt.Println("click failed:", res.Result.Error) // a failed action is a result, not an error
	}

	events := c.Subscribe(nil) // task:update, task:step, … from the extension
	defer events.Close()
	for e := range events.Events() {
		fmt.Println(e.Kind)
	}
}
