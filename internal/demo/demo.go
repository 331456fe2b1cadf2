// Package demo is the guided tour `go run ./examples/demo` runs: each step
// exercises one part of the SDK for real on this machine, prints what it
// does as it goes, and ends in a summary table.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Options configures a run. The zero value runs every step with a fresh
// temporary folder that is removed afterwards.
type Options struct {
	// Out receives progress lines and the summary; nil means os.Stdout.
	Out io.Writer
	// KeepTemp keeps the temporary folder and prints its path.
	KeepTemp bool
}

// step is one part of the tour.
type step struct {
	name string
	run  func(ctx context.Context, r *runner) (summary string, err error)
}

// runner carries what the steps share.
type runner struct {
	out io.Writer
	dir string // temporary folder for this run
}

// logf prints one progress line, indented under the current step.
func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "    "+format+"\n", args...)
}

type result struct {
	name    string
	ok      bool
	took    time.Duration
	summary string
}

// Run runs the tour. It returns an error when any step failed; every step
// runs even after an earlier one failed, so the summary is complete.
func Run(ctx context.Context, opts Options) error {
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	dir, err := os.MkdirTemp("", "agentbridge-demo-")
	if err != nil {
		return err
	}
	if opts.KeepTemp {
		fmt.Fprintf(out, "temporary folder (kept): %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	r := &runner{out: out, dir: dir}

	steps := []step{
		{"native messaging frames", framesStep},
		{"native host manifest", manifestStep},
	}
	var results []result
	for i, s := range steps {
		fmt.Fprintf(out, "[%d/%d] %s\n", i+1, len(steps), s.name)
		start := time.Now()
		summary, err := s.run(ctx, r)
		res := result{name: s.name, ok: err == nil, took: time.Since(start), summary: summary}
		if err != nil {
			res.summary = "error: " + err.Error()
			fmt.Fprintf(out, "    FAILED: %v\n", err)
		}
		results = append(results, res)
	}
	return printSummary(out, results)
}

func printSummary(out io.Writer, results []result) error {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tTIME\tWHAT HAPPENED")
	failed := 0
	for _, res := range results {
		status := "ok"
		if !res.ok {
			status = "FAILED"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.name, status, res.took.Round(time.Millisecond), oneLine(res.summary))
	}
	tw.Flush()
	if failed > 0 {
		return fmt.Errorf("%d of %d steps failed", failed, len(results))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
