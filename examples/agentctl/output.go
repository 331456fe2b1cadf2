package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/safeprint"
)

// defaultTimeout bounds a command when -timeout is not given: the
// bridge's own default (60 s) and a margin for its answer to arrive.
const defaultTimeout = 65 * time.Second

// run runs a parsed command on c and returns the exit code.
func (inv *invocation) run(ctx context.Context, c *agentproto.Client, e env, g *globalFlags) int {
	if inv.follow {
		return followEvents(ctx, c, e)
	}
	timeout := g.timeout
	if timeout == 0 {
		timeout = inv.timeout
	}
	return callAndPrint(ctx, c, e, timeout, func(ctx context.Context) (any, error) { return inv.do(ctx, c) })
}

// callAndPrint runs fn within timeout, printing the connection's events
// to standard error meanwhile, then prints its result on standard output.
func callAndPrint(ctx context.Context, c *agentproto.Client, e env, timeout time.Duration, fn func(context.Context) (any, error)) int {
	if timeout == 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sub := c.Subscribe(nil)
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for ev := range sub.Events() {
			fmt.Fprintf(e.Stderr, "%s\n", compact(ev.Raw))
		}
	}()
	res, err := fn(ctx)
	sub.Close()
	<-printed
	if err != nil {
		// The message may be the extension's: one line of it.
		fmt.Fprintf(e.Stderr, "agentctl: %s\n", safeprint.Line(err.Error()))
		return exitError
	}
	if err := printResult(e.Stdout, res); err != nil {
		fmt.Fprintf(e.Stderr, "agentctl: %v\n", err)
		return exitError
	}
	return exitOK
}

// followEvents prints every event as a JSON line until ctx ends (exit 0)
// or the connection is lost (exit 1).
func followEvents(ctx context.Context, c *agentproto.Client, e env) int {
	sub := c.Subscribe(nil)
	defer sub.Close()
	// A health call proves the connection and the token before waiting.
	if _, err := c.Health(ctx); err != nil {
		fmt.Fprintf(e.Stderr, "agentctl: %v\n", err)
		return exitError
	}
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case ev, ok := <-sub.Events():
			if !ok {
				if ctx.Err() != nil {
					return exitOK
				}
				fmt.Fprintln(e.Stderr, "agentctl: connection lost")
				return exitError
			}
			fmt.Fprintf(e.Stdout, "%s\n", compact(ev.Raw))
		}
	}
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// printResult prints a result: text as is, anything else as JSON
// indented by two spaces (as the reference agent-client prints), within
// safeprint's bounds: 64 levels indented, deeper ones compact, the output
// cut at 16 MiB with a line saying so.
func printResult(w io.Writer, v any) error {
	var raw []byte
	switch r := v.(type) {
	case nil:
		return nil
	case text:
		_, err := io.WriteString(w, string(r))
		return err
	case json.RawMessage:
		raw = r
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return err
		}
	}
	if err := safeprint.Indent(w, raw, nil); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
