package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Command is one parsed input line.
type Command struct {
	Name     string // navigate, read, click, type, screenshot, tabs, say, work, approve?, approve, reject, pending, help
	URL      string // navigate
	Selector string // read, click, type
	Text     string // type, say
	Enter    bool   // type: press Enter after typing
	File     string // screenshot
	Tool     string // approve?
	Args     string // approve?: the tool arguments JSON ("" when none)
	ID       string // approve, reject: an approval request id
	Seconds  int    // work: how long the turn runs
}

// ErrEmpty is returned by ParseCommand for a blank line.
var ErrEmpty = errors.New("empty line")

// maxLine bounds an input line.
const maxLine = 1 << 20

// maxWorkSeconds bounds a work turn.
const maxWorkSeconds = 3600

// ParseCommand parses one input line. A selector with spaces may be written
// as a double-quoted Go string: type "input[name=q]" some text.
func ParseCommand(line string) (Command, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Command{}, ErrEmpty
	}
	if len(line) > maxLine {
		return Command{}, errors.New("line too long")
	}
	name, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	c := Command{Name: name}
	switch name {
	case "navigate":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return c, errors.New("usage: navigate URL")
		}
		c.URL = rest
	case "read":
		sel, err := unquote(rest)
		if err != nil {
			return c, err
		}
		c.Selector = sel
	case "click":
		sel, err := unquote(rest)
		if err != nil || sel == "" {
			return c, errors.New("usage: click SELECTOR")
		}
		c.Selector = sel
	case "type":
		if first, r, _ := strings.Cut(rest, " "); first == "--enter" {
			c.Enter, rest = true, strings.TrimSpace(r)
		}
		sel, text, err := firstArg(rest)
		if err != nil || sel == "" {
			return c, errors.New("usage: type [--enter] SELECTOR TEXT")
		}
		c.Selector, c.Text = sel, text
	case "screenshot":
		if rest == "" {
			return c, errors.New("usage: screenshot FILE")
		}
		c.File = rest
	case "tabs", "help", "pending":
		if rest != "" {
			return c, fmt.Errorf("usage: %s", name)
		}
	case "say":
		if rest == "" {
			return c, errors.New("usage: say TEXT")
		}
		c.Text = rest
	case "work":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > maxWorkSeconds {
			return c, fmt.Errorf("usage: work SECONDS (1 to %d)", maxWorkSeconds)
		}
		c.Seconds = n
	case "approve?":
		tool, args, _ := strings.Cut(rest, " ")
		args = strings.TrimSpace(args)
		if tool == "" {
			return c, errors.New("usage: approve? TOOL ARGS_JSON")
		}
		if args != "" && !json.Valid([]byte(args)) {
			return c, errors.New("approve?: ARGS_JSON is not valid JSON")
		}
		c.Tool, c.Args = tool, args
	case "approve", "reject":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return c, fmt.Errorf("usage: %s ID", name)
		}
		c.ID = rest
	default:
		return c, fmt.Errorf("unknown command %q (try help)", truncate(name, 32))
	}
	return c, nil
}

// firstArg splits off the first argument, which may be a quoted string.
func firstArg(s string) (arg, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", errors.New("unterminated quoted argument")
		}
		arg, _ = strconv.Unquote(q)
		return arg, strings.TrimSpace(s[len(q):]), nil
	}
	arg, rest, _ = strings.Cut(s, " ")
	return arg, strings.TrimSpace(rest), nil
}

// unquote returns s, or the string it quotes.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	arg, rest, err := firstArg(s)
	if err != nil || rest != "" {
		return "", errors.New("bad quoted argument")
	}
	return arg, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

const helpText = `commands:
  navigate URL             open URL in the controlled tab; prints the url and title
  read [SELECTOR]          print the text of SELECTOR (the page body when omitted)
  click SELECTOR           click the element
  type [--enter] SELECTOR TEXT
                           type TEXT into the element ("quote" selectors with
                           spaces); --enter presses Enter after it
  screenshot FILE          save a screenshot of the visible tab to FILE
  tabs                     print each open tab: index, * when active, title, url
  say TEXT                 mirror an assistant turn saying TEXT into the panel
  work SECONDS             run a turn that long, unless the panel interrupts it
  approve? TOOL ARGS_JSON  ask for approval; prints approved or rejected (on
                           protocol 2 a tool call of a run on the active
                           conversation, suspended until answered)
  approve ID | reject ID   answer a pending approval from the terminal
  pending                  list the pending approvals (panel tool requests too)
  help                     this text`
