package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/tools"
)

// The tool catalogue: list the tools for a model, then run the one it
// chose through any Caller (here a Client of an in-memory bridge).
func ExampleCall() {
	ctx := context.Background()
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{
		Extension: agentprototest.Options{Handler: agentprototest.Mux{
			agentproto.TypeScroll: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
				fmt.Printf("extension got %s %s\n", r.Type, r.Payload)
				return json.RawMessage(`{"kind":"action:result","result":{"ok":true}}`), nil
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

	for _, tool := range tools.List()[:3] {
		fmt.Println(tool.Name)
	}

	res, err := tools.Call(ctx, c, "browser_scroll", json.RawMessage(`{"direction":"up"}`), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Result))

	_, err = tools.Call(ctx, c, "browser_navigate", json.RawMessage(`{"url":42}`), nil)
	var bad *tools.ArgumentsError
	fmt.Println(errors.As(err, &bad), bad.Path)
	// Output:
	// browser_snapshot
	// browser_navigate
	// browser_click
	// extension got browser.scroll {"amount":500,"amountPx":500,"direction":"up"}
	// {"kind":"action:result","result":{"ok":true}}
	// true /url
}
