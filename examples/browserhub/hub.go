package main

// This file wires the hub: options, the backend, serving, the loop over
// stdin's lines, and the shutdown.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/safeprint"
)

// DefaultApprovalTimeout bounds the wait for an answer to "approve?".
const DefaultApprovalTimeout = 5 * time.Minute

// TokenEnv is the environment variable the token is read from when no
// --token flag is given.
const TokenEnv = "BROWSERHUB_TOKEN"

// ResolveToken picks the token: the flag, else the environment, else a new
// one (generated is then true, and the caller should print it so that the
// user can copy it into the extension's options).
func ResolveToken(flagValue, envValue string) (token string, generated bool) {
	if flagValue != "" {
		return flagValue, false
	}
	if envValue != "" {
		return envValue, false
	}
	return extbridge.NewToken(), true
}

// Config configures Run.
type Config struct {
	Addr     string       // listen address; default 127.0.0.1:52789
	Listener net.Listener // when set, served instead of listening on Addr
	Token    string       // required
	Dir      string       // conversations, history.jsonl and artifacts/ live here
	In       io.Reader    // commands, one per line
	Out      io.Writer    // results and status lines
	Logger   *slog.Logger // hub diagnostics; default silent
	// ApprovalTimeout bounds each "approve?"; an unanswered request is
	// withdrawn. Default DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
}

// Run serves the hub and handles the commands read from In, each line as it
// arrives (so several approvals can be pending at once), until In ends or
// ctx is done; then it waits for the commands in flight and shuts the hub
// down. When In ends, pending approvals are withdrawn (nobody is left on
// the terminal to answer them). Run returns when ctx is done even if In is
// still blocked in a read.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Dir == "" {
		return errors.New("browserhub: no directory")
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "artifacts"), 0o700); err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	store, err := OpenStore(filepath.Join(cfg.Dir, "conversations"))
	if err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	defer store.Close()
	hist, err := extbridge.OpenInputHistory(filepath.Join(cfg.Dir, "history.jsonl"))
	if err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	// Pages and the extension choose much of what is printed: no control
	// character of theirs reaches the terminal as is.
	out := &printer{w: safeprint.NewWriter(cfg.Out)}
	project, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	// The backend is complete before the hub: it replies to the panel
	// through the Reply each message brings.
	be := &backend{store: store, hist: hist, out: out, mode: extbridge.ModeStandard, project: project}
	hub, err := extbridge.NewHub(cfg.Token, &extbridge.HubOptions{
		Addr:         cfg.Addr,
		ArtifactsDir: filepath.Join(cfg.Dir, "artifacts"),
		Backend:      be,
		// The panel's tool requests reach the built-in Echo tool, which
		// always asks for approval first.
		Tools:             extbridge.ToolHandlerFunc(echoTool),
		ToolNeedsApproval: be.toolNeedsApproval,
		Logger:            cfg.Logger,
		OnConnect: func(ci extbridge.ConnInfo) {
			out.printf("extension connected (version %s, origin %s)", safeprint.Line(orNone(ci.Version)), safeprint.Line(orNone(ci.Origin)))
		},
		OnDisconnect: func(extbridge.ConnInfo, error) { out.printf("extension disconnected") },
	})
	if err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	l := cfg.Listener
	if l == nil {
		// Listen first: a busy port is an error here, not a hub that
		// waits for an extension forever.
		if l, err = hub.Listen(); err != nil {
			hub.Close()
			return fmt.Errorf("browserhub: %w", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	out.printf("listening on ws://%s/ws, project dir %s", l.Addr(), project)

	approvalTimeout := cfg.ApprovalTimeout
	if approvalTimeout <= 0 {
		approvalTimeout = DefaultApprovalTimeout
	}
	// Approvals end with stdin: cancelled when In ends.
	approvalCtx, endApprovals := context.WithCancel(ctx)
	defer endApprovals()
	s := &session{hub: hub, be: be, out: out, approvalCtx: approvalCtx, approvalTimeout: approvalTimeout}
	lines := make(chan string)
	stopped := make(chan struct{})
	defer close(stopped)
	go readLines(cfg.In, lines, stopped)
	var wg sync.WaitGroup
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				endApprovals()
				break loop
			}
			wg.Go(func() { s.handle(ctx, line) })
		case <-ctx.Done():
			break loop
		}
	}
	wg.Wait()
	// Shutdown also waits for the panel's reply turns.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hub.Shutdown(sctx); err != nil {
		hub.Close()
	}
	if err := <-served; !errors.Is(err, extbridge.ErrServerClosed) {
		return fmt.Errorf("browserhub: %w", err)
	}
	return nil
}

// readLines sends In's lines until In ends or Run has stopped; a read
// already blocked in In ends only when In does.
func readLines(r io.Reader, lines chan<- string, stopped <-chan struct{}) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-stopped:
			return
		}
	}
}

// oneLine keeps a page's text (a title, a URL) on one output line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// printer writes whole outputs atomically, so that concurrent commands do
// not interleave their lines.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.print(fmt.Sprintf(format, args...))
}

func (p *printer) print(text string) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, text)
}

// session handles commands.
type session struct {
	hub *extbridge.Hub
	be  *backend
	out *printer

	approvalCtx     context.Context // cancelled when stdin ends
	approvalTimeout time.Duration
}

func (s *session) handle(ctx context.Context, line string) {
	cmd, err := ParseCommand(line)
	if errors.Is(err, ErrEmpty) {
		return
	}
	if err == nil {
		err = s.run(ctx, cmd)
	}
	if err != nil {
		s.out.printf("error: %s", safeprint.Line(err.Error()))
	}
}

func (s *session) run(ctx context.Context, cmd Command) error {
	h := s.hub
	switch cmd.Name {
	case "help":
		s.out.print(helpText)
	case "navigate":
		res, err := h.Navigate(ctx, cmd.URL)
		if err != nil {
			return err
		}
		s.out.printf("%s %s", safeprint.Line(res.URL), safeprint.Line(res.Title))
	case "read":
		res, err := h.Read(ctx, cmd.Selector)
		if err != nil {
			return err
		}
		s.out.print(res.Content)
	case "click":
		if _, err := h.Click(ctx, cmd.Selector); err != nil {
			return err
		}
		s.out.print("ok")
	case "type":
		if _, err := h.Type(ctx, cmd.Selector, cmd.Text, &extbridge.TypeOptions{PressEnter: cmd.Enter}); err != nil {
			return err
		}
		s.out.print("ok")
	case "screenshot":
		shot, err := h.Screenshot(ctx)
		if err != nil {
			return err
		}
		if err := os.WriteFile(cmd.File, shot.Data, 0o600); err != nil {
			return err
		}
		s.out.printf("wrote %s (%d bytes, %s)", cmd.File, len(shot.Data), shot.MIMEType)
	case "tabs":
		tabs, err := h.Tabs(ctx)
		if err != nil {
			return err
		}
		var b strings.Builder
		for _, t := range tabs {
			active := " "
			if t.Active {
				active = "*"
			}
			fmt.Fprintf(&b, "%d %s %s  %s\n", t.Index, active, orNone(oneLine(t.Title)), oneLine(t.URL))
		}
		if len(tabs) > 0 {
			s.out.print(b.String())
		}
	case "say":
		return s.say(ctx, cmd.Text)
	case "work":
		return s.work(ctx, time.Duration(cmd.Seconds)*time.Second)
	case "pending":
		for _, a := range h.PendingApprovals() {
			s.out.printf("%s %s %s", a.ID, safeprint.Line(a.ToolName), safeprint.Line(a.ToolArgs))
		}
	case "approve?":
		id := NewID()
		s.out.printf("approval %s pending: %s (answer in the panel, or: approve %s | reject %s)", id, cmd.Tool, id, id)
		actx, cancel := context.WithTimeout(s.approvalCtx, s.approvalTimeout)
		defer cancel()
		// On protocol 2 this is a tool call of a run on the active
		// conversation, which suspends until it is answered.
		d, err := h.RequestApproval(actx, extbridge.ApprovalRequest{ID: id, ToolName: cmd.Tool, ToolArgs: cmd.Args,
			ThreadID: s.be.activeID()})
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("approval %s: no answer within %v; withdrawn", id, s.approvalTimeout)
		case err != nil && ctx.Err() == nil && s.approvalCtx.Err() != nil:
			return fmt.Errorf("approval %s: withdrawn: stdin closed", id)
		case err != nil:
			return err
		}
		s.out.print(d.String())
	case "approve", "reject":
		if !h.ResolveApproval(cmd.ID, cmd.Name == "approve") {
			return fmt.Errorf("no pending approval %s", truncate(cmd.ID, 64))
		}
	}
	return nil
}

// work runs a turn of d on the active conversation, which the panel's stop
// button interrupts.
func (s *session) work(ctx context.Context, d time.Duration) error {
	conv := s.be.activeID()
	err := s.hub.RunTurn(ctx, conv, NewID(), func(ctx context.Context, t *extbridge.Turn) error {
		if err := t.Say(ctx, NewID(), fmt.Sprintf("working for %v…", d)); err != nil {
			return err
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return t.Say(ctx, NewID(), "done")
	})
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		s.out.print("work: interrupted")
		return nil
	}
	if err != nil {
		return err
	}
	s.out.print("work: done")
	return nil
}

// say mirrors an assistant turn into the panel and stores it in the active
// conversation.
func (s *session) say(ctx context.Context, text string) error {
	conv := s.be.activeID()
	runID := NewID()
	err := s.hub.RunTurn(ctx, conv, runID, func(ctx context.Context, t *extbridge.Turn) error {
		return t.Say(ctx, NewID(), text)
	})
	if err != nil {
		return err
	}
	if err := s.be.store.Append(conv, Message{Role: "assistant", Content: text}); err != nil {
		return err
	}
	s.out.print("ok")
	return nil
}
