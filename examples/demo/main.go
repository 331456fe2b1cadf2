// Command demo is a guided run of the agentbridge SDK on this machine:
//
//	go run ./examples/demo
//
// Each step exercises one part of the SDK for real and prints what it does;
// a summary table ends the run, and the exit status is non-zero when any
// step failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/demo"
)

func main() {
	var opts demo.Options
	flag.BoolVar(&opts.KeepTemp, "keep", false, "keep the temporary folder and print its path")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
