// Command hostload measures the built weboperator-host from outside, as
// Chrome and agents use it, and prints a Markdown table. See
// internal/hostload.
//
//	go run ./internal/cmd/hostload [-host BINARY] [-duration 3s] [-large 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/hostload"
)

func main() {
	bin := flag.String("host", "", "the weboperator-host binary (default: build it)")
	duration := flag.Duration("duration", 3*time.Second, "the time bound of each scenario")
	large := flag.Int("large", 10, "requests of the 16 MiB result scenario")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *bin, *duration, *large); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin string, duration time.Duration, large int) error {
	if bin == "" {
		built, remove, err := hostload.Build(ctx)
		if err != nil {
			return err
		}
		defer remove()
		bin = built
	}
	scenarios := hostload.ReferenceScenarios(duration)
	scenarios[len(scenarios)-1].Requests = large
	results, err := hostload.Run(ctx, bin, scenarios)
	if werr := hostload.WriteTable(os.Stdout, results); err == nil {
		err = werr
	}
	return err
}
