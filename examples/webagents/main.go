// Command webagents validates, checks, discovers and runs WebAgents
// manifests and batches. See `webagents help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/webagentscli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := webagentscli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}
