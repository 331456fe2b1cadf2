package main

import (
	"context"
	"sync"

	"github.com/agentbridge/agentbridge/extbridge"
)

// panelReply is the turn browserhub answers every panel message with, so
// that the panel, which shows "running" until a turn ends, returns to idle
// and the user learns why no agent answers.
const panelReply = "browserhub is an example program of the agentbridge SDK: it keeps this conversation " +
	"but runs no agent. Drive the browser from its terminal (type help there)."

// backend answers the panel from the folder. The hub (extbridge.Backend)
// calls its methods from the connection's read loop; the reply turns run
// in goroutines of their own, which stop waits for.
type backend struct {
	extbridge.BaseBackend
	store *Store
	hist  *extbridge.InputHistory
	out   *printer

	mu      sync.Mutex
	active  string
	mode    extbridge.Mode
	hub     *extbridge.Hub
	ctx     context.Context // the reply turns' context
	stopped bool
	replies sync.WaitGroup
}

// start gives the backend the hub its reply turns run on.
func (b *backend) start(ctx context.Context, hub *extbridge.Hub) {
	b.mu.Lock()
	b.ctx, b.hub = ctx, hub
	b.mu.Unlock()
}

// stop refuses new reply turns and waits for those running. It is
// idempotent.
func (b *backend) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.replies.Wait()
}

// reply answers a panel message in conversation conv with panelReply, as
// one turn (RUN_STARTED … RUN_FINISHED), and stores it.
func (b *backend) reply(conv string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.hub == nil {
		return
	}
	hub, ctx := b.hub, b.ctx
	b.replies.Go(func() {
		// Stored first, so that it precedes whatever follows the turn.
		err := b.store.Append(conv, Message{Role: "assistant", Content: panelReply})
		if err == nil {
			err = hub.RunTurn(ctx, conv, NewID(), func(ctx context.Context, t *extbridge.Turn) error {
				return t.Say(ctx, NewID(), panelReply)
			})
		}
		if err != nil {
			b.out.printf("panel reply: %v", err)
		}
	})
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

// NewSession is called for the panel's new_session and for its "New chat"
// button (the user_message "/clear", which the hub turns into NewSession).
func (b *backend) NewSession(context.Context, extbridge.SessionOptions) (*extbridge.Snapshot, error) {
	b.mu.Lock()
	b.active = NewID() // stored with its first message
	b.mu.Unlock()
	b.out.print("panel: new chat")
	return &extbridge.Snapshot{}, nil
}

func (b *backend) UserMessage(_ context.Context, m extbridge.UserMessage) error {
	if m.Content != "" {
		if _, err := b.hist.Add(m.Content); err != nil {
			return err
		}
	}
	conv := b.activeID()
	if err := b.store.Append(conv, Message{Role: "user", Content: m.Content, Attachments: m.Attachments}); err != nil {
		return err
	}
	defer b.reply(conv)
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
