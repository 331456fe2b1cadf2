// Command demo is a guided run of the agentbridge SDK on this machine:
//
//	go run ./examples/demo [--headful] [--chromium PATH] [--screenshots DIR] [--no-browser] [--keep]
//
// Each step exercises one part of the SDK for real and prints what it does;
// a summary table ends the run, and the exit status is non-zero when any
// step failed. The steps, each reading as an example of its package:
//
//   - native.go: nativemsg frames over an in-memory pipe, the size limit,
//     a native host manifest;
//   - webagents.go: the demo shop (examples/webagents-shop/shop, on webagents' handler), then
//     discovery, a paced batch with a $ref, and a write refused without
//     consent, from webagents' client;
//   - browser.go: an extbridge hub, the weboperator-host example as
//     Chromium's native host, and the same shop driven through agentproto's
//     client and through the hub;
//   - mcp.go: agentbridge-mcp (the nested module mcp) over stdio,
//     with a tool of each source: a shop action, the server's own hub (dialed
//     by extbridgetest's scripted extension) and, with Chromium, the bridge.
//
// demo.go runs the steps and prints the summary; the browser steps use
// the module's test harness (internal/browsertest) to start Chromium with
// the reference extension.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // the flag package has printed the error and the usage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// newFlagSet returns the demo's flags, which set opts.
func newFlagSet(opts *Options, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./examples/demo [flags]")
		fs.PrintDefaults()
	}
	fs.BoolVar(&opts.Headful, "headful", false, "show the browser window instead of running Chromium headless (needs a display)")
	fs.StringVar(&opts.Chromium, "chromium", "", "the Chromium executable at `PATH` (default: $AGENTBRIDGE_CHROMIUM, else chromium on $PATH)")
	fs.StringVar(&opts.ScreenshotDir, "screenshots", "", "save the browser steps' screenshots in the existing folder `DIR` (default: the system's temporary folder)")
	fs.BoolVar(&opts.NoBrowser, "no-browser", false, "skip the browser steps even when Chromium is installed")
	fs.BoolVar(&opts.KeepTemp, "keep", false, "keep the temporary folder and print its path")
	return fs
}

// parseFlags reads the command line into the demo's options. Errors (and
// -h) are printed to output, with the usage.
func parseFlags(args []string, output io.Writer) (Options, error) {
	var opts Options
	fs := newFlagSet(&opts, output)
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(output, err)
		fs.Usage()
		return Options{}, err
	}
	return opts, nil
}
