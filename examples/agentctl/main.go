// Command agentctl is an agent-side client of a WebOperator bridge, built
// only on the public agentproto API: it shows how to dial the agent socket
// (agentproto.Dial), send commands with the typed methods of
// agentproto.Client or raw with Client.Call, follow events with
// Client.Subscribe, and run the shared tool catalogue with
// tools.Call.
//
// Given one request as JSON it behaves like the reference agent-client:
// the result as indented JSON on standard output, events as JSON lines on
// standard error; unlike it, it exits non-zero on an error reply and has a
// timeout of its own.
//
//	agentctl '{"type":"bridge.health"}'
//	agentctl click @e12 -reason "open details"
//	agentctl tasks wait t1 -wait 2m
//	agentctl tool browser_scroll '{"direction":"up"}'
//	agentctl events
//
// Flags may come before or after a command's arguments; "--" ends the
// flags (for a TEXT that starts with "-").
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/safeprint"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // an error reply, a lost connection, a timeout
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr, Dial: agentproto.Dial})
	stop()
	os.Exit(code)
}

// env is what agentctl uses of its process, so that tests can run it
// against an in-memory bridge.
type env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
	Dial   func(ctx context.Context, path string, opts *agentproto.ClientOptions) (*agentproto.Client, error)
}

// globalFlags are accepted before the command and among its arguments.
type globalFlags struct {
	socket        string
	timeout       time.Duration
	tab           int
	skipPeerCheck bool
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.socket, "socket", g.socket, "the agent socket (default $"+agentproto.EnvSocket+" or "+agentproto.PlatformSocketPath()+")")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "how long to wait for an answer (default 65s, or the request's timeoutMs plus 5s)")
	fs.IntVar(&g.tab, "tab", g.tab, "the tab to act on (default: the active tab)")
	fs.BoolVar(&g.skipPeerCheck, "insecure-skip-peer-check", g.skipPeerCheck, "connect (and send the token) even to a bridge run by another user")
}

// run runs agentctl with args (os.Args[1:]) and returns the exit code.
func run(ctx context.Context, args []string, e env) int {
	// Results, events and error messages carry what pages and the
	// extension sent: keep terminal control sequences out of them.
	stdout, stderr := safeprint.NewWriter(e.Stdout), safeprint.NewWriter(e.Stderr)
	defer stdout.Flush()
	defer stderr.Flush()
	e.Stdout, e.Stderr = stdout, stderr
	g := &globalFlags{}
	fs := flag.NewFlagSet("agentctl", flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() { printUsage(e.Stderr, fs) }
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	rest := fs.Args()

	// Parse everything before dialing, so that a usage error needs no
	// bridge.
	var job func(ctx context.Context, c *agentproto.Client) int
	if strings.HasPrefix(strings.TrimSpace(rest[0]), "{") {
		if len(rest) != 1 {
			fs.Usage()
			return exitUsage
		}
		req, err := agentproto.ParseRequest([]byte(rest[0]))
		if err != nil || req.Type == "" {
			fmt.Fprintf(e.Stderr, "agentctl: the request is not valid: %v\n", orNoType(err))
			return exitUsage
		}
		job = func(ctx context.Context, c *agentproto.Client) int { return rawRequest(ctx, c, e, g, req) }
	} else {
		cmd, cmdArgs, err := findCommand(rest)
		if err != nil {
			fmt.Fprintf(e.Stderr, "agentctl: %v\n", err)
			fs.Usage()
			return exitUsage
		}
		inv, err := cmd.parse(cmdArgs, g, e.Stderr)
		if err != nil {
			fmt.Fprintf(e.Stderr, "agentctl: %v\nusage: agentctl %s\n", err, cmd.usage)
			return exitUsage
		}
		job = func(ctx context.Context, c *agentproto.Client) int { return inv.run(ctx, c, e, g) }
	}

	// agentproto.Dial reads no environment: the reference client's
	// variables are read here, explicitly.
	socket := g.socket
	if socket == "" {
		socket = e.Getenv(agentproto.EnvSocket)
	}
	if socket == "" {
		socket = agentproto.PlatformSocketPath()
	}
	c, err := e.Dial(ctx, socket, &agentproto.ClientOptions{
		Token:                 e.Getenv(agentproto.EnvToken),
		InsecureSkipPeerCheck: g.skipPeerCheck,
	})
	if err != nil {
		fmt.Fprintf(e.Stderr, "agentctl: %v\n", err)
		return exitError
	}
	defer c.Close()
	return job(ctx, c)
}

func orNoType(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("it has no type")
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "usage: agentctl [flags] '{\"type\":\"bridge.health\"}'\n       agentctl [flags] COMMAND [args and flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", c.usage)
	}
	fmt.Fprint(w, "\nFlags may come before or after arguments; -- ends them.\n\nflags:\n")
	fs.PrintDefaults()
}

// rawRequest sends one request given as JSON, as the reference
// agent-client does.
func rawRequest(ctx context.Context, c *agentproto.Client, e env, g *globalFlags, req *agentproto.Request) int {
	timeout := g.timeout
	if timeout == 0 && req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs)*time.Millisecond + 5*time.Second
	}
	return callAndPrint(ctx, c, e, timeout, func(ctx context.Context) (any, error) {
		var res json.RawMessage
		err := c.Call(ctx, req.Type, req.Payload, &res)
		return res, err
	})
}
