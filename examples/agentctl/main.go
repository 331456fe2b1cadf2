// Command agentctl talks to a WebOperator bridge over the agent socket:
// one request given as JSON, typed subcommands, or "events" to follow the
// event stream. See internal/agentctl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/agentctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := agentctl.Run(ctx, os.Args[1:], agentctl.IO{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
