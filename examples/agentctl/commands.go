package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
)

// command is one typed subcommand. Its usage line is the one the usage
// text shows, and a test runs every line as written, so the two agree.
type command struct {
	name  string // "click", or "tasks start"
	usage string
	// define registers the command's flags on fs and returns the function
	// that, given the positional arguments once everything is parsed,
	// builds what the command does.
	define func(fs *flag.FlagSet, g *globalFlags) func(args []string) (*invocation, error)
}

// invocation is a parsed command, ready to run on a client.
type invocation struct {
	timeout time.Duration // 0 means the default
	do      func(ctx context.Context, c *agentproto.Client) (any, error)
	follow  bool // events: print events until interrupted
}

// text is a result printed as is rather than as JSON.
type text string

var commands = []command{
	{name: "health", usage: "health", define: noFlags(0, func(_ []string, g *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(ctx context.Context, c *agentproto.Client) (any, error) { return c.Health(ctx) }
	})},
	{name: "navigate", usage: "navigate URL", define: noFlags(1, func(args []string, g *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Navigate(ctx, agentproto.NavigateParams{URL: args[0], TabID: g.tab})
		}
	})},
	{name: "snapshot", usage: "snapshot [-all]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		all := fs.Bool("all", false, "include elements outside the viewport")
		return exactly(0, func([]string) *invocation {
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Snapshot(ctx, agentproto.SnapshotParams{TabID: g.tab, AllElements: *all})
			})
		})
	}},
	{name: "click", usage: "click REF [-reason TEXT]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		reason := fs.String("reason", "", "why (shown to the user)")
		return exactly(1, func(args []string) *invocation {
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Click(ctx, agentproto.ClickParams{Ref: args[0], Reason: *reason, TabID: g.tab})
			})
		})
	}},
	{name: "type", usage: "type REF TEXT [-append] [-submit]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		appendMode := fs.Bool("append", false, "append instead of replacing")
		submit := fs.Bool("submit", false, "press Enter after typing")
		return exactly(2, func(args []string) *invocation {
			mode := agentproto.TypeModeReplace
			if *appendMode {
				mode = agentproto.TypeModeAppend
			}
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Type(ctx, agentproto.TypeParams{Ref: args[0], Text: args[1], Mode: mode, Submit: *submit, TabID: g.tab})
			})
		})
	}},
	{name: "press", usage: "press [KEY] [-modifiers ctrl+shift] [-ref REF]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		mods := fs.String("modifiers", "", "modifiers joined with +, such as ctrl+shift")
		ref := fs.String("ref", "", "the element to press the key on")
		return atMost(1, func(args []string) *invocation {
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Press(ctx, agentproto.PressParams{Key: optional(args), Modifiers: *mods, Ref: *ref, TabID: g.tab})
			})
		})
	}},
	{name: "scroll", usage: "scroll up|down|top|bottom|to_ref [-amount PX] [-ref REF]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		amount := fs.Int("amount", 0, "pixels to scroll (default: most of the viewport)")
		ref := fs.String("ref", "", "the element to scroll to (to_ref)")
		return func(args []string) (*invocation, error) {
			directions := []agentproto.ScrollDirection{agentproto.ScrollUp, agentproto.ScrollDown, agentproto.ScrollTop, agentproto.ScrollBottom, agentproto.ScrollToRef}
			if len(args) != 1 || !slices.Contains(directions, agentproto.ScrollDirection(args[0])) {
				return nil, errors.New("want one direction: up, down, top, bottom, to_ref")
			}
			if *amount < 0 {
				return nil, errors.New("-amount must not be negative")
			}
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.Scroll(ctx, agentproto.ScrollParams{Direction: agentproto.ScrollDirection(args[0]), AmountPx: *amount, Ref: *ref, TabID: g.tab})
			}), nil
		}
	}},
	{name: "extract", usage: "extract [REFS|visible|all]", define: noFlags(-1, func(args []string, g *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		refs := agentproto.ExtractVisible
		if len(args) == 1 {
			refs = agentproto.ExtractTarget(args[0]) // visible, all, or refs
		}
		return func(ctx context.Context, c *agentproto.Client) (any, error) {
			return c.Extract(ctx, agentproto.ExtractParams{Refs: refs, TabID: g.tab})
		}
	})},
	{name: "screenshot", usage: "screenshot -o FILE", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		out := fs.String("o", "", "the file to write the image to")
		return func(args []string) (*invocation, error) {
			if *out == "" || len(args) != 0 {
				return nil, errors.New("want -o FILE and no arguments")
			}
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				shot, err := c.Screenshot(ctx, agentproto.ScreenshotParams{TabID: g.tab})
				if err != nil {
					return nil, err
				}
				if err := os.WriteFile(*out, shot.Data, 0o600); err != nil {
					return nil, err
				}
				return map[string]any{"file": *out, "mimeType": shot.MIMEType, "bytes": len(shot.Data)}, nil
			}), nil
		}
	}},
	{name: "tasks list", usage: "tasks list", define: noFlags(0, func(_ []string, _ *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(ctx context.Context, c *agentproto.Client) (any, error) { return c.ListTasks(ctx) }
	})},
	{name: "tasks get", usage: "tasks get ID", define: noFlags(1, func(args []string, _ *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(ctx context.Context, c *agentproto.Client) (any, error) { return c.GetTask(ctx, args[0]) }
	})},
	{name: "tasks start", usage: "tasks start GOAL [-url URL] [-auto-confirm] [-attach ID=PATH]...", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		url := fs.String("url", "", "the URL to start from")
		auto := fs.Bool("auto-confirm", false, "act without asking; final submits still ask")
		var attach attachments
		fs.Var(&attach, "attach", "a file the task may upload, ID=ABSOLUTE_PATH (repeatable)")
		return exactly(1, func(args []string) *invocation {
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.StartTask(ctx, agentproto.StartTaskParams{Goal: args[0], StartURL: *url, TabID: g.tab, AutoConfirm: *auto, Attachments: attach})
			})
		})
	}},
	{name: "tasks stop", usage: "tasks stop ID", define: taskControl((*agentproto.Client).StopTask)},
	{name: "tasks pause", usage: "tasks pause ID", define: taskControl((*agentproto.Client).PauseTask)},
	{name: "tasks resume", usage: "tasks resume ID", define: taskControl((*agentproto.Client).ResumeTask)},
	{name: "tasks confirm", usage: "tasks confirm ID [-deny]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		deny := fs.Bool("deny", false, "refuse instead of approving")
		return exactly(1, func(args []string) *invocation {
			return call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return okResult(c.ConfirmTask(ctx, args[0], !*deny))
			})
		})
	}},
	{name: "tasks wait", usage: "tasks wait ID [-wait DURATION]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		wait := fs.Duration("wait", agentproto.DefaultWaitTimeout, "how long the extension waits for the task to settle")
		return func(args []string) (*invocation, error) {
			if len(args) != 1 {
				return nil, errors.New("want one task ID")
			}
			if *wait < time.Millisecond {
				return nil, errors.New("-wait must be at least 1ms")
			}
			inv := call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				return c.WaitTask(ctx, agentproto.WaitParams{ID: args[0], TimeoutMs: wait.Milliseconds()})
			})
			// The request must outlive the extension's own wait.
			inv.timeout = *wait + 10*time.Second
			return inv, nil
		}
	}},
	{name: "tools", usage: "tools", define: noFlags(0, func(_ []string, _ *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(context.Context, *agentproto.Client) (any, error) {
			var b strings.Builder
			for _, t := range tools.List() {
				fmt.Fprintf(&b, "%s\t%s\n", t.Name, t.Description)
			}
			return text(b.String()), nil
		}
	})},
	{name: "tool", usage: "tool NAME [ARGUMENTS_JSON] [-o FILE]", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		out := fs.String("o", "", "the file to write an image result to")
		progress := fs.Output() // standard error
		return func(args []string) (*invocation, error) {
			if len(args) < 1 || len(args) > 2 {
				return nil, errors.New("want a tool NAME and optional ARGUMENTS_JSON")
			}
			var toolArgs json.RawMessage
			if len(args) == 2 {
				toolArgs = json.RawMessage(args[1])
			}
			inv := call(func(ctx context.Context, c *agentproto.Client) (any, error) {
				res, err := tools.Call(ctx, c, args[0], toolArgs, &tools.CallOptions{
					Progress: func(p tools.Progress) { fmt.Fprintln(progress, "agentctl:", p.Message) },
				})
				if err != nil {
					return nil, err
				}
				if res.Image != nil && *out != "" {
					if err := os.WriteFile(*out, res.Image.Data, 0o600); err != nil {
						return nil, err
					}
				}
				return text(res.Text + "\n"), nil
			})
			if args[0] == tools.ExecuteGoal {
				inv.timeout = tools.DefaultMaxGoalTimeout + time.Minute // the tool bounds itself
			}
			return inv, nil
		}
	}},
	{name: "events", usage: "events", define: func(fs *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		return func(args []string) (*invocation, error) {
			if len(args) != 0 {
				return nil, errors.New("events takes no arguments")
			}
			return &invocation{follow: true}, nil
		}
	}},
}

// taskControl defines a tasks command that takes one task ID and answers
// {"ok":true}: stop, pause, resume.
func taskControl(fn func(*agentproto.Client, context.Context, string) error) func(*flag.FlagSet, *globalFlags) func([]string) (*invocation, error) {
	return noFlags(1, func(args []string, _ *globalFlags) func(context.Context, *agentproto.Client) (any, error) {
		return func(ctx context.Context, c *agentproto.Client) (any, error) { return okResult(fn(c, ctx, args[0])) }
	})
}

func okResult(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return agentproto.OKResult{OK: true}, nil
}

func call(do func(ctx context.Context, c *agentproto.Client) (any, error)) *invocation {
	return &invocation{do: do}
}

// noFlags defines a command without flags of its own that takes n
// arguments (-1: zero or one).
func noFlags(n int, build func(args []string, g *globalFlags) func(context.Context, *agentproto.Client) (any, error)) func(*flag.FlagSet, *globalFlags) func([]string) (*invocation, error) {
	return func(_ *flag.FlagSet, g *globalFlags) func([]string) (*invocation, error) {
		check := func(args []string) *invocation { return call(build(args, g)) }
		if n < 0 {
			return atMost(1, check)
		}
		return exactly(n, check)
	}
}

func exactly(n int, build func(args []string) *invocation) func([]string) (*invocation, error) {
	return func(args []string) (*invocation, error) {
		if len(args) != n {
			return nil, fmt.Errorf("want %d argument(s), got %d", n, len(args))
		}
		return build(args), nil
	}
}

func atMost(n int, build func(args []string) *invocation) func([]string) (*invocation, error) {
	return func(args []string) (*invocation, error) {
		if len(args) > n {
			return nil, fmt.Errorf("want at most %d argument(s), got %d", n, len(args))
		}
		return build(args), nil
	}
}

func optional(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// findCommand finds the command that args start with and returns the
// rest of args.
func findCommand(args []string) (*command, []string, error) {
	name, rest := args[0], args[1:]
	if name == "tasks" {
		if len(rest) == 0 {
			return nil, nil, errors.New("tasks needs a subcommand: list, get, start, stop, pause, resume, confirm or wait")
		}
		name, rest = "tasks "+rest[0], rest[1:]
	}
	for i := range commands {
		if commands[i].name == name {
			return &commands[i], rest, nil
		}
	}
	return nil, nil, fmt.Errorf("unknown command %q", name)
}

// parse parses a command's arguments; its flags and the global ones may
// come anywhere among them.
func (c *command) parse(args []string, g *globalFlags, stderr io.Writer) (*invocation, error) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	build := c.define(fs, g)
	g.register(fs)
	positional, err := parseAnywhere(fs, args)
	if err != nil {
		return nil, err
	}
	return build(positional)
}

// parseAnywhere parses flags wherever they appear among args and returns
// the other arguments in order. The flag package stops at the first
// argument that is not a flag, so parsing resumes after each one; "--"
// ends the flags.
func parseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// attachments collects -attach ID=PATH values.
type attachments []agentproto.Attachment

func (a *attachments) String() string { return fmt.Sprint(len(*a)) }

func (a *attachments) Set(v string) error {
	id, path, ok := strings.Cut(v, "=")
	if !ok || id == "" || path == "" {
		return errors.New("want ID=PATH")
	}
	if !filepath.IsAbs(path) {
		return errors.New("the path must be absolute")
	}
	*a = append(*a, agentproto.Attachment{ID: id, Name: filepath.Base(path), Path: path})
	return nil
}
