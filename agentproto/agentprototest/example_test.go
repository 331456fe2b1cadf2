package agentprototest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
)

// Test an agent against a whole bridge in memory: server, native host and
// a stand-in extension whose answers the test scripts.
func ExampleNewBridge() {
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{
		Server: bridge.ServerOptions{Token: "test-token"},
		Extension: agentprototest.Options{Handler: agentprototest.Mux{
			agentproto.TypeNavigate: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
				return map[string]any{"ok": true, "tabId": 7, "url": "https://example.com/"}, nil
			}),
		}},
	})
	defer b.Close()
	ctx := context.Background()
	if err := b.WaitOnline(ctx); err != nil {
		panic(err)
	}

	c, err := b.Dial(ctx, &agentproto.ClientOptions{Token: "test-token"})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	nav, err := c.Navigate(ctx, agentproto.NavigateParams{URL: "https://example.com/"})
	fmt.Println(nav.TabID, nav.URL, err)

	// Types the stand-in does not handle get the extension's error, as the
	// peer sent it.
	_, err = c.Snapshot(ctx, agentproto.SnapshotParams{})
	fmt.Println(err, errors.Is(err, agentproto.ErrUnknownRequest))
	// Output:
	// 7 https://example.com/ <nil>
	// Unknown bridge request: browser.snapshot true
}
