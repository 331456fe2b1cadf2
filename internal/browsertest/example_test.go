package browsertest_test

import (
	"context"
	"log"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/extension"
)

// A program such as the demo launches Chromium with the extension and the
// real native host, without a *testing.T. (Not run: it needs Chromium.)
func ExampleLaunch() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	host, err := browsertest.BuildBinary(ctx, "github.com/agentbridge/agentbridge/examples/weboperator-host")
	if err != nil {
		log.Fatal(err)
	}
	defer browsertest.RemoveBuilds()

	b, err := browsertest.Launch(ctx, &browsertest.Options{
		HostPath: host,
		// The host inherits Chromium's environment.
		Env: []string{
			"WEBOPERATOR_API_TOKEN=dev-token",
			"WEBOPERATOR_AGENT_SOCKET=/tmp/demo-bridge.sock",
		},
		Extension: extension.Config{
			HubPort:   52789, // a hub listening on ws://127.0.0.1:52789/ws
			HubToken:  "0123456789abcdef0123456789abcdef",
			Approvals: extension.ApprovalApprove,
		},
	})
	if err != nil {
		log.Fatal(err) // errors.Is(err, browsertest.ErrChromiumNotFound): say how to install it
	}
	defer b.Close() // stops Chromium and the host, removes the profile

	// ... drive the browser through the agent protocol and the hub ...
	<-ctx.Done()
}
