// Package browserhub is the logic of examples/browserhub: a small CLI that
// embeds extbridge.Hub, keeps the panel's conversations and input history
// in a folder, and drives the browser from commands read line by line.
package browserhub

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
)

// TokenEnv is the environment variable the token is read from when no
// --token flag is given.
const TokenEnv = "BROWSERHUB_TOKEN"

// ResolveToken picks the token: the flag, else the environment, else a new
// one (generated is then true, and the caller should print it so that the
// user can copy it into the extension's options).
func ResolveToken(flagValue, envValue string) (token string, generated bool, err error) {
	if flagValue != "" {
		return flagValue, false, nil
	}
	if envValue != "" {
		return envValue, false, nil
	}
	token, err = extbridge.NewToken()
	return token, err == nil, err
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
}

// Run serves the hub and handles the commands read from In, each line as it
// arrives (so several approvals can be pending at once), until In ends or
// ctx is done; then it waits for the commands in flight and shuts the hub
// down. Run returns when ctx is done even if In is still blocked in a read.
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
	out := &printer{w: cfg.Out}
	be := &backend{store: store, hist: hist, out: out, mode: extbridge.ModeStandard}
	hub, err := extbridge.NewHub(&extbridge.HubOptions{
		Token:        cfg.Token,
		Addr:         cfg.Addr,
		ArtifactsDir: filepath.Join(cfg.Dir, "artifacts"),
		Backend:      be,
		Logger:       cfg.Logger,
		OnConnect: func(ci extbridge.ConnInfo) {
			out.printf("extension connected (version %s, origin %s)", orNone(ci.Version), orNone(ci.Origin))
		},
		OnDisconnect: func(extbridge.ConnInfo, error) { out.printf("extension disconnected") },
	})
	if err != nil {
		return fmt.Errorf("browserhub: %w", err)
	}
	l := cfg.Listener
	if l == nil {
		addr := cfg.Addr
		if addr == "" {
			addr = extbridge.DefaultAddr
		}
		if l, err = net.Listen("tcp", addr); err != nil {
			hub.Close()
			return fmt.Errorf("browserhub: %w", err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	out.printf("listening on ws://%s/ws", l.Addr())

	s := &session{hub: hub, be: be, out: out}
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
				break loop
			}
			wg.Go(func() { s.handle(ctx, line) })
		case <-ctx.Done():
			break loop
		}
	}
	wg.Wait()
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
		s.out.printf("error: %v", err)
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
		s.out.printf("%s %s", res.URL, res.Title)
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
		if _, err := h.Type(ctx, cmd.Selector, cmd.Text, nil); err != nil {
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
			b.WriteString(t.URL)
			b.WriteByte('\n')
		}
		if len(tabs) > 0 {
			s.out.print(b.String())
		}
	case "say":
		return s.say(ctx, cmd.Text)
	case "approve?":
		id := NewID()
		s.out.printf("approval %s pending: %s (answer in the panel, or: approve %s | reject %s)", id, cmd.Tool, id, id)
		d, err := h.RequestApproval(ctx, extbridge.ApprovalRequest{ID: id, ToolName: cmd.Tool, ToolArgs: cmd.Args})
		if err != nil {
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

// backend answers the panel from the folder.
type backend struct {
	extbridge.BaseBackend
	store *Store
	hist  *extbridge.InputHistory
	out   *printer

	mu     sync.Mutex
	active string
	mode   extbridge.Mode
}

// activeID returns the active conversation, starting one when none is.
func (b *backend) activeID() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active == "" {
		b.active = NewID()
	}
	return b.active
}

func (b *backend) ListConversations(context.Context) ([]extbridge.Conversation, error) {
	return b.store.List()
}

func (b *backend) ResumeConversation(_ context.Context, id string) (*extbridge.Snapshot, error) {
	c, err := b.store.Load(id)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.active = id
	b.mu.Unlock()
	return &extbridge.Snapshot{Messages: c.Messages}, nil
}

func (b *backend) NewSession(context.Context) (*extbridge.Snapshot, error) {
	b.mu.Lock()
	b.active = NewID() // stored with its first message
	b.mu.Unlock()
	return &extbridge.Snapshot{}, nil
}

func (b *backend) UserMessage(_ context.Context, m extbridge.UserMessage) error {
	if m.Content != "" {
		if _, err := b.hist.Add(m.Content); err != nil {
			return err
		}
	}
	if err := b.store.Append(b.activeID(), Message{Role: "user", Content: m.Content, Attachments: m.Attachments}); err != nil {
		return err
	}
	if len(m.Attachments) > 0 {
		b.out.printf("panel: %s [%d attachment(s)]", m.Content, len(m.Attachments))
	} else {
		b.out.printf("panel: %s", m.Content)
	}
	return nil
}

func (b *backend) ListHistory(context.Context) ([]string, error) { return b.hist.Entries(), nil }

func (b *backend) Mode(context.Context) (extbridge.Mode, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mode, nil
}

func (b *backend) SetMode(_ context.Context, m extbridge.Mode) error {
	b.mu.Lock()
	b.mode = m
	b.mu.Unlock()
	b.out.printf("mode: %s", m)
	return nil
}

func (b *backend) Interrupt(context.Context) error {
	b.out.print("panel: interrupt")
	return nil
}
