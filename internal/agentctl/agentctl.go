// Package agentctl is the agentctl command: an agent-side client of the
// agent protocol. Given one request as JSON it behaves like the reference
// agent-client (the result as indented JSON on standard output, events as
// JSON lines on standard error) but exits non-zero on an error reply and
// has its own timeout; typed subcommands cover every command, and
// "events" follows the event stream.
package agentctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
)

// IO is what the command uses of its process.
type IO struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
	// Dial connects to the bridge (agentproto.Dial by default).
	Dial func(ctx context.Context, path string, opts *agentproto.ClientOptions) (*agentproto.Client, error)
}

const usage = `usage: agentctl [flags] '{"type":"bridge.health"}'
       agentctl [flags] COMMAND [args]

commands:
  health
  navigate URL
  snapshot [-all]
  click REF [-reason TEXT]
  type [-append] [-submit] REF TEXT       (command flags come before arguments)
  press [KEY] [-modifiers ctrl+shift] [-ref REF]
  scroll up|down|top|bottom|to_ref [-amount PX] [-ref REF]
  extract [REFS|visible|all]
  screenshot -o FILE
  tasks list | get ID | start GOAL [-url URL] [-auto-confirm] [-attach ID=PATH]...
        | stop ID | pause ID | resume ID | confirm ID [-deny] | wait ID [-wait DURATION]
  events                follow events (JSON lines on standard output)

flags:
`

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // an error reply, a lost connection, a timeout
	ExitUsage = 2
)

type runner struct {
	io      IO
	socket  string
	timeout time.Duration
	tab     int
	client  *agentproto.Client
}

// Run runs agentctl with args (os.Args[1:]) and returns the exit code.
func Run(ctx context.Context, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = os.Getenv
	}
	if io.Dial == nil {
		io.Dial = agentproto.Dial
	}
	r := &runner{io: io}
	fs := flag.NewFlagSet("agentctl", flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	fs.Usage = func() {
		fmt.Fprint(io.Stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&r.socket, "socket", "", "the agent socket (default $WEBOPERATOR_AGENT_SOCKET or "+agentproto.DefaultSocketPath+")")
	fs.DurationVar(&r.timeout, "timeout", 0, "how long to wait for an answer (default 65s, or the request's timeoutMs plus 5s)")
	fs.IntVar(&r.tab, "tab", 0, "the tab to act on (default: the active tab)")
	sameUser := fs.Bool("require-same-user", runtime.GOOS == "linux", "refuse a bridge running as another user (Linux)")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return ExitUsage
	}
	if r.socket == "" {
		if p := io.Getenv(agentproto.EnvSocket); p != "" {
			r.socket = p
		} else {
			r.socket = agentproto.DefaultSocketPath
		}
	}
	c, err := io.Dial(ctx, r.socket, &agentproto.ClientOptions{
		Token:                 io.Getenv(agentproto.EnvToken),
		InsecureSkipPeerCheck: !*sameUser,
	})
	if err != nil {
		fmt.Fprintf(io.Stderr, "agentctl: %v\n", err)
		return ExitError
	}
	defer c.Close()
	r.client = c
	rest := fs.Args()
	if strings.HasPrefix(strings.TrimSpace(rest[0]), "{") {
		if len(rest) != 1 {
			fs.Usage()
			return ExitUsage
		}
		return r.raw(ctx, rest[0])
	}
	return r.command(ctx, rest[0], rest[1:])
}

// usageError marks an error as the user's.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// raw sends one request given as JSON, as the reference agent-client.
func (r *runner) raw(ctx context.Context, text string) int {
	req, err := agentproto.ParseRequest([]byte(text))
	if err != nil {
		fmt.Fprintf(r.io.Stderr, "agentctl: the request is not valid: %v\n", err)
		return ExitUsage
	}
	if req.Type == "" {
		fmt.Fprintln(r.io.Stderr, "agentctl: the request has no type")
		return ExitUsage
	}
	timeout := r.timeout
	if timeout == 0 && req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs)*time.Millisecond + 5*time.Second
	}
	return r.call(ctx, timeout, func(ctx context.Context) (any, error) {
		var res json.RawMessage
		err := r.client.Call(ctx, req.Type, req.Payload, &res)
		return res, err
	})
}

// call runs fn with the command's timeout while printing events to
// standard error, then prints the result.
func (r *runner) call(ctx context.Context, timeout time.Duration, fn func(context.Context) (any, error)) int {
	if timeout == 0 {
		timeout = 65 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub := r.client.Subscribe(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range sub.Events() {
			fmt.Fprintf(r.io.Stderr, "%s\n", compact(e.Raw))
		}
	}()
	res, err := fn(ctx)
	sub.Close()
	<-done
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(r.io.Stderr, "agentctl: %v\n", err)
			return ExitUsage
		}
		fmt.Fprintf(r.io.Stderr, "agentctl: %v\n", err)
		return ExitError
	}
	if res == nil {
		return ExitOK
	}
	if err := printJSON(r.io.Stdout, res); err != nil {
		fmt.Fprintf(r.io.Stderr, "agentctl: %v\n", err)
		return ExitError
	}
	return ExitOK
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func printJSON(w io.Writer, v any) error {
	var out []byte
	var err error
	if raw, ok := v.(json.RawMessage); ok {
		var b bytes.Buffer
		err = json.Indent(&b, raw, "", "  ")
		out = b.Bytes()
	} else {
		out, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

func (r *runner) command(ctx context.Context, name string, args []string) int {
	if name == "events" {
		return r.events(ctx, args)
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(r.io.Stderr)
	var fn func(ctx context.Context) (any, error)
	timeout := r.timeout
	c, tab := r.client, r.tab
	switch name {
	case "health":
		fn = func(ctx context.Context) (any, error) { return c.Health(ctx) }
	case "navigate":
		fn = func(ctx context.Context) (any, error) {
			url, err := oneArg(fs, "URL")
			if err != nil {
				return nil, err
			}
			return c.Navigate(ctx, agentproto.NavigateParams{URL: url, TabID: tab})
		}
	case "snapshot":
		all := fs.Bool("all", false, "include elements outside the viewport")
		fn = func(ctx context.Context) (any, error) {
			if fs.NArg() != 0 {
				return nil, usagef("snapshot takes no arguments")
			}
			return c.Snapshot(ctx, agentproto.SnapshotParams{TabID: tab, AllElements: *all})
		}
	case "click":
		reason := fs.String("reason", "", "why (shown to the user)")
		fn = func(ctx context.Context) (any, error) {
			ref, err := oneArg(fs, "REF")
			if err != nil {
				return nil, err
			}
			return c.Click(ctx, agentproto.ClickParams{Ref: ref, Reason: *reason, TabID: tab})
		}
	case "type":
		appendMode := fs.Bool("append", false, "append instead of replacing")
		submit := fs.Bool("submit", false, "press Enter after typing")
		fn = func(ctx context.Context) (any, error) {
			if fs.NArg() != 2 {
				return nil, usagef("usage: type REF TEXT")
			}
			mode := agentproto.TypeModeReplace
			if *appendMode {
				mode = agentproto.TypeModeAppend
			}
			return c.Type(ctx, agentproto.TypeParams{Ref: fs.Arg(0), Text: fs.Arg(1), Mode: mode, Submit: *submit, TabID: tab})
		}
	case "press":
		mods := fs.String("modifiers", "", "modifiers, such as ctrl+shift")
		ref := fs.String("ref", "", "the element to press the key on")
		fn = func(ctx context.Context) (any, error) {
			if fs.NArg() > 1 {
				return nil, usagef("usage: press [KEY]")
			}
			return c.Press(ctx, agentproto.PressParams{Key: fs.Arg(0), Modifiers: *mods, Ref: *ref, TabID: tab})
		}
	case "scroll":
		amount := fs.Int("amount", 0, "pixels to scroll")
		ref := fs.String("ref", "", "the element to scroll to (to_ref)")
		fn = func(ctx context.Context) (any, error) {
			dir, err := oneArg(fs, "up|down|top|bottom|to_ref")
			if err != nil {
				return nil, err
			}
			return c.Scroll(ctx, agentproto.ScrollParams{Direction: dir, AmountPx: *amount, Ref: *ref, TabID: tab})
		}
	case "extract":
		fn = func(ctx context.Context) (any, error) {
			refs := agentproto.ExtractVisible
			if fs.NArg() > 1 {
				return nil, usagef("usage: extract [REFS|visible|all]")
			}
			if fs.NArg() == 1 {
				refs = fs.Arg(0)
			}
			return c.Extract(ctx, agentproto.ExtractParams{Refs: refs, TabID: tab})
		}
	case "screenshot":
		out := fs.String("o", "", "the file to write the image to")
		fn = func(ctx context.Context) (any, error) {
			if *out == "" || fs.NArg() != 0 {
				return nil, usagef("usage: screenshot -o FILE")
			}
			shot, err := c.Screenshot(ctx, agentproto.ScreenshotParams{TabID: tab})
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(*out, shot.Data, 0o600); err != nil {
				return nil, err
			}
			return map[string]any{"file": *out, "mimeType": shot.MIMEType, "bytes": len(shot.Data)}, nil
		}
	case "tasks":
		var err error
		fn, timeout, err = r.tasks(fs, args)
		if err != nil {
			fmt.Fprintf(r.io.Stderr, "agentctl: %v\n", err)
			return ExitUsage
		}
		args = nil // parsed by tasks
	default:
		fmt.Fprintf(r.io.Stderr, "agentctl: unknown command %q\n%s", name, usage)
		return ExitUsage
	}
	if args != nil {
		if err := fs.Parse(args); err != nil {
			return ExitUsage
		}
	}
	return r.call(ctx, timeout, fn)
}

func oneArg(fs *flag.FlagSet, what string) (string, error) {
	if fs.NArg() != 1 {
		return "", usagef("usage: %s %s", fs.Name(), what)
	}
	return fs.Arg(0), nil
}

// attachFlag collects -attach ID=PATH values.
type attachFlag []agentproto.Attachment

func (a *attachFlag) String() string { return fmt.Sprint(len(*a)) }

func (a *attachFlag) Set(v string) error {
	id, path, ok := strings.Cut(v, "=")
	if !ok || id == "" || path == "" {
		return errors.New("want ID=PATH")
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	*a = append(*a, agentproto.Attachment{ID: id, Name: name, Path: path})
	return nil
}

func (r *runner) tasks(fs *flag.FlagSet, args []string) (func(context.Context) (any, error), time.Duration, error) {
	if len(args) == 0 {
		return nil, 0, usagef("usage: tasks list|get|start|stop|pause|resume|confirm|wait")
	}
	c, sub, args := r.client, args[0], args[1:]
	url := fs.String("url", "", "start URL (start)")
	auto := fs.Bool("auto-confirm", false, "act without asking (start); final submits still ask")
	var attach attachFlag
	fs.Var(&attach, "attach", "an attachment ID=PATH (start; repeatable)")
	deny := fs.Bool("deny", false, "refuse instead of approving (confirm)")
	wait := fs.Duration("wait", 0, "how long the extension waits (wait; default 120s)")
	if err := fs.Parse(args); err != nil {
		return nil, 0, err
	}
	id := func() (string, error) {
		if fs.NArg() != 1 {
			return "", usagef("usage: tasks %s ID", sub)
		}
		return fs.Arg(0), nil
	}
	withID := func(f func(ctx context.Context, id string) (any, error)) func(context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			taskID, err := id()
			if err != nil {
				return nil, err
			}
			return f(ctx, taskID)
		}
	}
	ok := func(err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return agentproto.OKResult{OK: true}, nil
	}
	switch sub {
	case "list":
		return func(ctx context.Context) (any, error) { return c.ListTasks(ctx) }, r.timeout, nil
	case "get":
		return withID(func(ctx context.Context, id string) (any, error) { return c.GetTask(ctx, id) }), r.timeout, nil
	case "start":
		return func(ctx context.Context) (any, error) {
			if fs.NArg() != 1 {
				return nil, usagef("usage: tasks start GOAL")
			}
			return c.StartTask(ctx, agentproto.StartTaskParams{Goal: fs.Arg(0), StartURL: *url, TabID: r.tab, AutoConfirm: *auto, Attachments: attach})
		}, r.timeout, nil
	case "stop":
		return withID(func(ctx context.Context, id string) (any, error) { return ok(c.StopTask(ctx, id)) }), r.timeout, nil
	case "pause":
		return withID(func(ctx context.Context, id string) (any, error) { return ok(c.PauseTask(ctx, id)) }), r.timeout, nil
	case "resume":
		return withID(func(ctx context.Context, id string) (any, error) { return ok(c.ResumeTask(ctx, id)) }), r.timeout, nil
	case "confirm":
		return withID(func(ctx context.Context, id string) (any, error) { return ok(c.ConfirmTask(ctx, id, !*deny)) }), r.timeout, nil
	case "wait":
		w := *wait
		if w == 0 {
			w = agentproto.DefaultWaitTimeout
		}
		timeout := r.timeout
		if timeout == 0 {
			timeout = w + 10*time.Second
		}
		return withID(func(ctx context.Context, id string) (any, error) {
			return c.WaitTask(ctx, agentproto.WaitParams{ID: id, TimeoutMs: w.Milliseconds()})
		}), timeout, nil
	}
	return nil, 0, usagef("unknown tasks command %q", sub)
}

// events prints every event as a JSON line until ctx ends (exit 0) or the
// connection is lost (exit 1).
func (r *runner) events(ctx context.Context, args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(r.io.Stderr, "agentctl: events takes no arguments")
		return ExitUsage
	}
	sub := r.client.Subscribe(nil)
	defer sub.Close()
	// A health call proves the connection and the token before waiting.
	if _, err := r.client.Health(ctx); err != nil {
		fmt.Fprintf(r.io.Stderr, "agentctl: %v\n", err)
		return ExitError
	}
	for {
		select {
		case <-ctx.Done():
			return ExitOK
		case e, ok := <-sub.Events():
			if !ok {
				if ctx.Err() != nil {
					return ExitOK
				}
				fmt.Fprintln(r.io.Stderr, "agentctl: connection lost")
				return ExitError
			}
			fmt.Fprintf(r.io.Stdout, "%s\n", compact(e.Raw))
		}
	}
}
