// Command webagents is the agent side of WebAgents on the command line:
// validate a manifest file, check a live site without running anything,
// discover the actions a page publishes, and run a batch of operations.
//
// It is an example of embedding [webagents.Client]: everything it does goes
// through the public API, so a copy of this folder is a starting point for
// your own tool. Run `webagents help` for the commands and exit codes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/safeprint"
	"github.com/agentbridge/agentbridge/webagents"
)

// Exit codes, documented in docs/webagents.md.
const (
	exitOK        = 0 // valid, found, batch succeeded
	exitInvalid   = 1 // invalid, absent/unsafe/unavailable, batch failed or refused
	exitUsage     = 2 // bad arguments or unreadable input
	exitNoActions = 3 // discover: the site publishes actions, none for this page
	exitProtocol  = 4 // run: the site answered with something that is not a WebAgents envelope; the batch may have run
)

const usage = `usage:
  webagents validate FILE --origin URL     check a local manifest (JSON or markdown)
  webagents check URL [--json]             check a live site without running actions
  webagents discover URL                   show the actions a page publishes
  webagents run URL --batch FILE [--allow-writes] [--allow-irreversible] [--idempotency-key KEY]
                                           run a batch (JSON: {"operations":[…]} or […])
check, discover and run take --timeout DURATION (default 20s, 10s, 45s).
exit codes: 0 ok, 1 invalid or failed, 2 usage error,
  3 no actions for this page (discover),
  4 the site's answer is not a WebAgents envelope; the batch may have run (run)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr, &webagents.Client{})
	stop()
	os.Exit(code)
}

// cli runs one command (args without the program name) with client and
// returns the exit code.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer, client *webagents.Client) int {
	// Much of what is printed comes from the sites checked (error messages,
	// headers, manifests): keep terminal control sequences out of it.
	out, errOut := safeprint.NewWriter(stdout), safeprint.NewWriter(stderr)
	defer out.Flush()
	defer errOut.Flush()
	stdout, stderr = out, errOut
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
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
		return exitOK
	default:
		fmt.Fprintf(stderr, "webagents: unknown command %q\n%s", cmd, usage)
		return exitUsage
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
