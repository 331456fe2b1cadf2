// Package webagentscli implements the webagents command: validate, check,
// discover and run. It is internal so that examples/webagents stays a thin
// main and the commands are tested in-process.
package webagentscli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/strictjson"
	"github.com/agentbridge/agentbridge/webagents"
)

// Exit codes.
const (
	ExitOK      = 0 // valid, found, batch succeeded
	ExitInvalid = 1 // invalid, absent/unsafe, batch failed or refused
	ExitUsage   = 2 // bad arguments or unreadable input
)

// Options configures Main. The zero value uses http.DefaultClient.
type Options struct {
	HTTPClient *http.Client
}

const usage = `usage:
  webagents validate FILE --origin URL     check a local manifest (JSON or markdown)
  webagents check URL [--json]             check a live site without running actions
  webagents discover URL                   show the actions a page publishes
  webagents run URL --batch FILE [--allow-writes] [--allow-irreversible] [--idempotency-key KEY]
                                           run a batch (JSON: {"operations":[…]} or […])
exit codes: 0 ok, 1 invalid or failed, 2 usage error
`

// Main runs the command line args (without the program name) and returns
// the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, opts *Options) int {
	if opts == nil {
		opts = &Options{}
	}
	// Much of what is printed comes from the sites checked (error messages,
	// headers, manifests): keep terminal control sequences out of it.
	stdout, stderr = inertWriter{stdout}, inertWriter{stderr}
	client := &webagents.Client{HTTPClient: opts.HTTPClient}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "validate":
		return validate(rest, stdout, stderr)
	case "check":
		return check(ctx, client, rest, stdout, stderr)
	case "discover":
		return discover(ctx, client, rest, stdout, stderr)
	case "run":
		return run(ctx, client, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "webagents: unknown command %q\n%s", cmd, usage)
		return ExitUsage
	}
}

// parse parses flags that may come before or after the positional
// arguments, and requires exactly want positionals.
func parse(fs *flag.FlagSet, args []string, want int, stderr io.Writer) ([]string, bool) {
	fs.SetOutput(stderr)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	if len(positional) != want {
		fmt.Fprintf(stderr, "webagents %s: want %d argument(s), got %d\n%s", fs.Name(), want, len(positional), usage)
		return nil, false
	}
	return positional, true
}

// errFileTooLarge is returned by readFile for a file over its limit.
var errFileTooLarge = errors.New("file too large")

// readFile reads at most limit bytes of a file.
func readFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", name, limit, errFileTooLarge)
	}
	return data, nil
}

func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	origin := fs.String("origin", "", "the site's public origin, e.g. https://shop.example (required)")
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return ExitUsage
	}
	if *origin == "" {
		fmt.Fprintf(stderr, "webagents validate: --origin is required\n%s", usage)
		return ExitUsage
	}
	if _, err := webagents.ParseOrigin(*origin); err != nil {
		fmt.Fprintf(stderr, "webagents validate: --origin: %v\n", err)
		return ExitUsage
	}
	data, err := readFile(pos[0], 4*webagents.MaxDocumentChars)
	if errors.Is(err, errFileTooLarge) {
		// Over the document limit whatever its characters: an invalid
		// manifest, not a usage error.
		fmt.Fprintf(stdout, "%s: invalid: %v\n", pos[0], webagents.ErrDocumentTooLarge)
		return ExitInvalid
	}
	if err != nil {
		fmt.Fprintf(stderr, "webagents validate: %v\n", err)
		return ExitUsage
	}
	m, err := webagents.ParseDocument(data, &webagents.ParseOptions{BaseURL: *origin, Strict: true})
	var ve *webagents.ValidationError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(stdout, "%s: invalid (%d problems)\n", pos[0], len(ve.Problems))
		for _, p := range ve.Problems {
			fmt.Fprintf(stdout, "  error   %s\n", p)
		}
		return ExitInvalid
	case errors.Is(err, webagents.ErrNoManifest):
		fmt.Fprintf(stdout, "%s: invalid: neither raw JSON nor one ```webagents fenced block\n", pos[0])
		return ExitInvalid
	case err != nil:
		fmt.Fprintf(stdout, "%s: invalid: %v\n", pos[0], err)
		return ExitInvalid
	}
	fmt.Fprintf(stdout, "%s: valid (%d actions)\n", pos[0], len(m.Actions))
	for _, w := range m.Warnings {
		fmt.Fprintf(stdout, "  warning %s\n", w)
	}
	return ExitOK
}

func check(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return ExitUsage
	}
	rep, err := c.Check(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "webagents check: %v\n", err)
		return ExitUsage
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		for _, d := range rep.Documents {
			if d.Error != "" {
				fmt.Fprintf(stdout, "%-4s %s: %s\n", d.Method, d.URL, d.Error)
			} else {
				fmt.Fprintf(stdout, "%-4s %s: %d %s\n", d.Method, d.URL, d.Status, d.ContentType)
			}
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "error   %s\n", p)
		}
		for _, w := range rep.Warnings {
			fmt.Fprintf(stdout, "warning %s\n", w)
		}
		if rep.Endpoint != "" {
			fmt.Fprintf(stdout, "endpoint: %s\n", rep.Endpoint)
		}
		fmt.Fprintf(stdout, "actions in scope: %s\n", strings.Join(rep.ActionsInScope, ", "))
		verdict := "valid"
		if !rep.Valid {
			verdict = "invalid"
		}
		fmt.Fprintf(stdout, "%s: %s (%d problems, %d warnings)\n", rep.URL, verdict, len(rep.Problems), len(rep.Warnings))
	}
	if !rep.Valid {
		return ExitInvalid
	}
	return ExitOK
}

func discover(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("discover", flag.ContinueOnError)
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return ExitUsage
	}
	d, err := c.Discover(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "webagents discover: %v\n", err)
		return ExitUsage
	}
	fmt.Fprintf(stdout, "status: %s\n", d.Status)
	if d.Status != webagents.DiscoveryFound {
		if d.Err != nil {
			fmt.Fprintf(stdout, "reason: %v\n", d.Err)
		}
		fmt.Fprintln(stdout, "fall back to normal browsing")
		return ExitInvalid
	}
	fmt.Fprintf(stdout, "document: %s\nendpoint: %s\n", d.DocumentURL, d.Endpoint)
	for _, w := range d.Warnings {
		fmt.Fprintf(stdout, "warning %s\n", w)
	}
	page := pos[0]
	view := d.Manifest.ModelView(pathOf(page))
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(view)
	return ExitOK
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "/"
	}
	return u.EscapedPath()
}

// batchFile is the --batch file: a batch object or a bare operations array.
type batchFile struct {
	Operations []webagents.Operation `json:"operations"`
}

func run(ctx context.Context, c *webagents.Client, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	batchPath := fs.String("batch", "", "file holding the batch (required)")
	allowWrites := fs.Bool("allow-writes", false, "allow actions whose effect is write")
	allowIrreversible := fs.Bool("allow-irreversible", false, "allow irreversible actions (such as placing an order)")
	key := fs.String("idempotency-key", "", "send this Idempotency-Key so a retry runs at most once")
	pos, ok := parse(fs, args, 1, stderr)
	if !ok {
		return ExitUsage
	}
	if *batchPath == "" {
		fmt.Fprintf(stderr, "webagents run: --batch is required\n%s", usage)
		return ExitUsage
	}
	data, err := readFile(*batchPath, webagents.TransportLimitBytes)
	if err != nil {
		fmt.Fprintf(stderr, "webagents run: %v\n", err)
		return ExitUsage
	}
	var ops []webagents.Operation
	trimmed := strings.TrimSpace(string(data))
	if strings.HasPrefix(trimmed, "[") {
		err = strictjson.Unmarshal(data, &ops)
	} else {
		var b batchFile
		err = strictjson.Unmarshal(data, &b)
		ops = b.Operations
	}
	if err != nil || len(ops) == 0 {
		fmt.Fprintf(stderr, "webagents run: %s: not a batch (want {\"operations\":[…]} or […])\n", *batchPath)
		return ExitUsage
	}
	res, err := c.Run(ctx, pos[0], ops, &webagents.RunOptions{
		AllowWrites: *allowWrites, AllowIrreversible: *allowIrreversible, IdempotencyKey: *key,
	})
	if res != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res.Response)
	}
	if err != nil {
		fmt.Fprintf(stderr, "webagents run: %v\n", err)
		return ExitInvalid
	}
	return ExitOK
}

// inertWriter replaces C0 control characters other than tab and newline,
// DEL, C1 control characters and invalid UTF-8 with U+FFFD, so that text from a site
// cannot drive the terminal (escape sequences, hyperlinks, clearing the
// screen). Each Write is expected to hold whole UTF-8 sequences, as fmt and
// json.Encoder produce.
type inertWriter struct{ w io.Writer }

func (iw inertWriter) Write(p []byte) (int, error) {
	clean := true
	for _, r := range string(p) {
		if isControl(r) || r == utf8.RuneError { // invalid bytes too: 0x9b is CSI to 8-bit terminals
			clean = false
			break
		}
	}
	if clean {
		return iw.w.Write(p)
	}
	out := strings.Map(func(r rune) rune {
		if isControl(r) {
			return utf8.RuneError
		}
		return r
	}, string(p))
	if _, err := io.WriteString(iw.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}
