package main

// The tour: each step exercises one part of the SDK for real on this
// machine, prints what it does as it goes, and the run ends in a summary
// table.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbridge/agentbridge/safeprint"
	"github.com/agentbridge/agentbridge/webagents"
)

// Options configures a run. The zero value runs every step with a fresh
// temporary folder that is removed afterwards.
type Options struct {
	// Out receives progress lines and the summary; nil means os.Stdout.
	Out io.Writer
	// KeepTemp keeps the temporary folder and prints its path.
	KeepTemp bool
	// Chromium is the browser executable; "" means $AGENTBRIDGE_CHROMIUM,
	// else Chromium on PATH. When none is found on PATH the browser steps
	// are skipped with instructions; a path given here or in
	// $AGENTBRIDGE_CHROMIUM that does not work fails them.
	Chromium string
	// Headful shows the browser window instead of running headless.
	Headful bool
	// ScreenshotDir is where the browser steps save their screenshots,
	// each under a fresh name; "" means os.TempDir().
	ScreenshotDir string
	// NoBrowser skips the browser steps even when Chromium is present.
	NoBrowser bool
	// PBKDF2Iterations is the demo shop's password hashing cost; 0 means
	// the shop's default (600,000, OWASP's figure). The tests lower it:
	// under the race detector on a loaded machine, one sign-up at the
	// default cost has taken 20 s.
	PBKDF2Iterations int
}

// step is one part of the tour.
type step struct {
	name string
	run  func(ctx context.Context, r *runner) (summary string, err error)
}

// runner carries what the steps share.
type runner struct {
	opts     Options
	out      io.Writer
	dir      string   // temporary folder for this run
	cleanups []func() // run in reverse order when the tour ends

	shopURL string            // the shop's origin, once a WebAgents step started it
	agent   *webagents.Client // the WebAgents client, with the agent's cookies
	actions actionLog         // what the shop ran
	browser *browserSession   // the running browser, once started
}

// skipError marks a step that could not run here, with what to do about it.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

func skip(format string, args ...any) error { return &skipError{reason: fmt.Sprintf(format, args...)} }

// atEnd registers f to run when the tour ends, last registered first.
func (r *runner) atEnd(f func()) { r.cleanups = append(r.cleanups, f) }

// newRunner returns the runner of a run that prints to out. Pages, the
// extension and the servers choose some of what is printed: no control
// character of theirs reaches the terminal as is.
func newRunner(opts Options, out io.Writer, dir string) *runner {
	return &runner{opts: opts, out: safeprint.NewWriter(out), dir: dir}
}

// logf prints one progress line, indented under the current step; a
// string argument is shown on that one line (its line breaks visible).
func (r *runner) logf(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = safeprint.Line(s)
		}
	}
	fmt.Fprintf(r.out, "    "+format+"\n", args...)
}

type result struct {
	name    string
	status  string // "ok", "skipped" or "FAILED"
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
	if opts.ScreenshotDir != "" {
		// Fail now rather than after the browser steps have run.
		info, err := os.Stat(opts.ScreenshotDir)
		if err != nil {
			return fmt.Errorf("screenshots folder: %w", err)
		}
		if !info.IsDir() {
			return fmt.Errorf("screenshots folder: %s is not a folder", opts.ScreenshotDir)
		}
	}
	dir, err := os.MkdirTemp("", "agentbridge-demo-")
	if err != nil {
		return err
	}
	r := newRunner(opts, out, dir)
	out = r.out
	if opts.KeepTemp {
		fmt.Fprintf(out, "temporary folder (kept): %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	defer func() {
		for i := len(r.cleanups) - 1; i >= 0; i-- {
			r.cleanups[i]()
		}
	}()

	steps := []step{
		{"native messaging frames", framesStep},
		{"native host manifest", manifestStep},
		{"WebAgents: discovery", discoveryStep},
		{"WebAgents: batch with $ref and pacing", batchStep},
		{"WebAgents: write without consent", consentStep},
		{"Chromium with the reference extension", launchStep},
		{"agent protocol in Chromium", agentProtocolStep},
		{"extension bridge in Chromium", extensionBridgeStep},
		{"MCP server over the three protocols", mcpStep},
	}
	var results []result
	for i, s := range steps {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(out, "[%d/%d] %s\n", i+1, len(steps), s.name)
		start := time.Now()
		summary, err := s.run(ctx, r)
		res := result{name: s.name, status: "ok", took: time.Since(start), summary: summary}
		var skipped *skipError
		switch {
		case errors.As(err, &skipped):
			res.status, res.summary = "skipped", skipped.reason
			fmt.Fprintf(out, "    skipped: %s\n", skipped.reason)
		case err != nil:
			res.status, res.summary = "FAILED", "error: "+err.Error()
			fmt.Fprintf(out, "    FAILED: %v\n", err)
		}
		results = append(results, res)
	}
	if err := printSummary(out, results); err != nil {
		return err
	}
	return ctx.Err()
}

func printSummary(out io.Writer, results []result) error {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tTIME\tWHAT HAPPENED")
	failed := 0
	for _, res := range results {
		if res.status == "FAILED" {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.name, res.status, res.took.Round(time.Millisecond), oneLine(res.summary))
	}
	tw.Flush()
	if failed > 0 {
		return fmt.Errorf("%d of %d steps failed", failed, len(results))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 110 {
		s = string(r[:107]) + "..."
	}
	return s
}
