package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

// validate checks a local manifest file as a site's owner would before
// publishing it: strictly (exactly one fenced block) and against the site's
// origin.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	origin := fs.String("origin", "", "the site's public origin, e.g. https://shop.example (required)")
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return exitUsage
	}
	if *origin == "" {
		fmt.Fprintf(stderr, "webagents validate: --origin is required\n%s", usage)
		return exitUsage
	}
	if _, err := webagents.ParseOrigin(*origin); err != nil {
		fmt.Fprintf(stderr, "webagents validate: --origin: %v\n", err)
		return exitUsage
	}
	data, err := readFile(pos[0], 4*webagents.MaxDocumentChars)
	if errors.Is(err, errFileTooLarge) {
		// Over the document limit whatever its characters: an invalid
		// manifest, not a usage error.
		fmt.Fprintf(stdout, "%s: invalid: %v\n", line(pos[0]), webagents.ErrDocumentTooLarge)
		return exitInvalid
	}
	if err != nil {
		fmt.Fprintf(stderr, "webagents validate: %v\n", err)
		return exitUsage
	}
	m, err := webagents.ParseDocument(data, &webagents.ParseOptions{BaseURL: *origin, Strict: true})
	var ve *webagents.ValidationError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(stdout, "%s: invalid (%d problems)\n", line(pos[0]), len(ve.Problems))
		for _, p := range ve.Problems {
			fmt.Fprintf(stdout, "  error   %s\n", line(p))
		}
		return exitInvalid
	case errors.Is(err, webagents.ErrNoManifest):
		fmt.Fprintf(stdout, "%s: invalid: neither raw JSON nor one ```webagents fenced block\n", line(pos[0]))
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stdout, "%s: invalid: %s\n", line(pos[0]), line(err))
		return exitInvalid
	}
	fmt.Fprintf(stdout, "%s: valid (%d actions)\n", line(pos[0]), len(m.Actions))
	for _, w := range m.Warnings {
		fmt.Fprintf(stdout, "  warning %s\n", line(w))
	}
	return exitOK
}

// timeoutFlag adds --timeout to a command; 0 keeps the Client's default.
func timeoutFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("timeout", 0, "give up after this long (0: the default)")
}

// withTimeout returns a copy of c whose timeouts are d, or c when d is 0.
func withTimeout(c *webagents.Client, d time.Duration, stderr io.Writer, cmd string) (*webagents.Client, bool) {
	switch {
	case d < 0:
		fmt.Fprintf(stderr, "webagents %s: --timeout must not be negative\n", cmd)
		return nil, false
	case d == 0:
		return c, true
	}
	cc := *c
	cc.DiscoverTimeout, cc.CheckTimeout, cc.RunTimeout = d, d, d
	return &cc, true
}

// check smoke-tests a live site without running any action.
func check(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := timeoutFlag(fs)
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return exitUsage
	}
	if c, ok = withTimeout(c, *timeout, stderr, "check"); !ok {
		return exitUsage
	}
	rep, err := c.Check(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "webagents check: %s\n", line(err))
		return exitUsage
	}
	if *asJSON {
		_ = printJSON(stdout, rep)
	} else {
		for _, d := range rep.Documents {
			if d.Error != "" {
				fmt.Fprintf(stdout, "%-4s %s: %s\n", d.Method, line(d.URL), line(d.Error))
			} else {
				fmt.Fprintf(stdout, "%-4s %s: %d %s\n", d.Method, line(d.URL), d.Status, line(d.ContentType))
			}
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "error   %s\n", line(p))
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(stdout, "warning %s\n", line(w))
		}
		if rep.Endpoint != "" {
			fmt.Fprintf(stdout, "endpoint: %s\n", line(rep.Endpoint))
		}
		fmt.Fprintf(stdout, "actions in scope: %s\n", line(strings.Join(rep.ActionsInScope, ", ")))
		verdict := "valid"
		if !rep.Valid {
			verdict = "invalid"
		}
		fmt.Fprintf(stdout, "%s: %s (%d problems, %d warnings)\n", line(rep.URL), verdict, len(rep.Problems), len(rep.Warnings))
	}
	if !rep.Valid {
		return exitInvalid
	}
	return exitOK
}

// discover prints what a model may be shown of the actions a page
// publishes.
func discover(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	timeout := timeoutFlag(fs)
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return exitUsage
	}
	if c, ok = withTimeout(c, *timeout, stderr, "discover"); !ok {
		return exitUsage
	}
	d, err := c.Discover(ctx, pos[0])
	var unavailable *webagents.DiscoveryError
	switch {
	case errors.As(err, &unavailable):
		// No usable manifest: say why, and that the agent browses instead.
		d := unavailable.Discovery
		fmt.Fprintf(stdout, "status: %s\n", d.Status)
		if d.Status == webagents.DiscoveryNoActions {
			fmt.Fprintf(stdout, "document: %s\n", line(d.DocumentURL))
			fmt.Fprintln(stdout, "the site publishes actions, none for this page: fall back to normal browsing")
			return exitNoActions
		}
		if d.Err != nil {
			fmt.Fprintf(stdout, "reason: %s\n", line(d.Err))
		}
		fmt.Fprintln(stdout, "fall back to normal browsing")
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "webagents discover: %s\n", line(err))
		return exitUsage
	}
	fmt.Fprintf(stdout, "status: %s\n", d.Status)
	fmt.Fprintf(stdout, "document: %s\nendpoint: %s\n", line(d.DocumentURL), line(d.Endpoint))
	for _, w := range d.Warnings {
		fmt.Fprintf(stdout, "warning %s\n", line(w))
	}
	_ = printJSON(stdout, d.Manifest.ModelView(pathOf(pos[0])))
	return exitOK
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "/"
	}
	return u.EscapedPath()
}

// decodeBatchFile reads the --batch file: a batch object (its "version"
// may be left out) or a bare operations array, checked as a server would.
func decodeBatchFile(data []byte) ([]webagents.Operation, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		trimmed = append(append([]byte(`{"version":"0.1","operations":`), trimmed...), '}')
	case bytes.HasPrefix(trimmed, []byte("{")):
		var probe struct {
			Version *string `json:"version"`
		}
		if json.Unmarshal(trimmed, &probe) == nil && probe.Version == nil {
			trimmed = append([]byte(`{"version":"0.1",`), trimmed[1:]...)
		}
	}
	b, err := webagents.DecodeBatch(trimmed)
	if err != nil {
		return nil, err
	}
	return b.Operations, nil
}

// The flags of run that give consent to writes and irreversible actions.
const (
	allowWritesFlag       = "allow-writes"
	allowIrreversibleFlag = "allow-irreversible"
)

// run discovers the page's actions and runs a batch on them.
func run(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	batchPath := fs.String("batch", "", "file holding the batch (required)")
	allowWrites := fs.Bool(allowWritesFlag, false, "allow actions whose effect is write")
	allowIrreversible := fs.Bool(allowIrreversibleFlag, false, "allow irreversible actions (such as placing an order)")
	key := fs.String("idempotency-key", "", "send this Idempotency-Key so a retry runs at most once")
	timeout := timeoutFlag(fs)
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return exitUsage
	}
	if c, ok = withTimeout(c, *timeout, stderr, "run"); !ok {
		return exitUsage
	}
	if *batchPath == "" {
		fmt.Fprintf(stderr, "webagents run: --batch is required\n%s", usage)
		return exitUsage
	}
	data, err := readFile(*batchPath, webagents.TransportLimitBytes)
	if err != nil {
		fmt.Fprintf(stderr, "webagents run: %v\n", err)
		return exitUsage
	}
	ops, err := decodeBatchFile(data)
	if err != nil {
		fmt.Fprintf(stderr, "webagents run: %s: not a batch (want {\"operations\":[…]} or […]): %v\n", *batchPath, err)
		return exitUsage
	}
	res, err := c.DiscoverAndRun(ctx, pos[0], ops, &webagents.RunOptions{
		AllowWrites: *allowWrites, AllowIrreversible: *allowIrreversible, IdempotencyKey: *key,
	})
	if res != nil {
		if res.Replayed {
			fmt.Fprintln(stderr, "webagents run: replayed: the site answered with its stored response to an earlier request with this idempotency key; the batch did not run again")
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "webagents run: warning: %s\n", line(w))
		}
		if res.Response != nil {
			_ = printJSON(stdout, res.Response)
		} else if len(res.Body) > 0 {
			// Not an envelope: show what the site said, as it said it.
			_, _ = stdout.Write(res.Body)
			if !bytes.HasSuffix(res.Body, []byte("\n")) {
				fmt.Fprintln(stdout)
			}
		}
	}
	var pe *webagents.ProtocolError
	var ce *webagents.ConsentError
	switch {
	case errors.As(err, &ce):
		// The error names RunOptions' fields; a user of this command
		// consents with its flags.
		fmt.Fprintf(stderr, "webagents run: refused, nothing was sent: %s\n", line(ce.Refusal("--"+allowWritesFlag, "--"+allowIrreversibleFlag)))
		return exitInvalid
	case errors.As(err, &pe):
		fmt.Fprintf(stderr, "webagents run: %s\n", line(err))
		return exitProtocol
	case err != nil:
		fmt.Fprintf(stderr, "webagents run: %s\n", line(err))
		return exitInvalid
	}
	return exitOK
}
