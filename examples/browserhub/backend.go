package main

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/safeprint"
)

// panelReply is the turn browserhub answers every panel message with, so
// that the panel, which shows "running" until a turn ends, returns to idle
// and the user learns why no agent answers.
const panelReply = "browserhub is an example program of the agentbridge SDK: it keeps this conversation " +
	"but runs no agent. Drive the browser from its terminal (type help there)."

// backend answers the panel from the folder. The hub (extbridge.Backend)
// calls its methods from the connection's read loop; it never holds the
// hub: each panel message comes with the extbridge.Reply its reply turn
// runs on, in a goroutine the hub owns and Shutdown waits for.
type backend struct {
	extbridge.BaseBackend
	store *Store
	hist  *extbridge.InputHistory
	out   *printer

	project string // the project dir (--dir, absolute) protocol-2 frames must name

	mu     sync.Mutex
	active string
	mode   extbridge.Mode
}

// reply answers a panel message in conversation conv, as one turn
// (RUN_STARTED … RUN_FINISHED): the user's own message echoed (newer
// panels show it only then), then panelReply, which is stored.
func (b *backend) reply(r *extbridge.Reply, conv, userText string) error {
	// Stored first, so that it precedes whatever follows the turn.
	if err := b.store.Append(conv, Message{Role: "assistant", Content: panelReply}); err != nil {
		return err
	}
	return r.StartTurn(conv, NewID(), func(ctx context.Context, t *extbridge.Turn) error {
		var err error
		if userText != "" {
			err = t.Echo(ctx, NewID(), userText)
		}
		if err == nil {
			err = t.Say(ctx, NewID(), panelReply)
		}
		if err != nil && !errors.Is(err, extbridge.ErrClosed) {
			b.out.printf("panel reply: %s", safeprint.Line(err.Error()))
		}
		return err
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

// inProject reports whether a call is for this hub's project: a classic
// frame (no project dir) or a protocol-2 one naming --dir.
func (b *backend) inProject(ctx context.Context) bool {
	dir := extbridge.ProjectDir(ctx)
	if dir == "" || filepath.Clean(dir) == b.project {
		return true
	}
	b.out.printf("panel: project dir %q is not this hub's; set the extension's project dir to %s", dir, b.project)
	return false
}

func (b *backend) ListConversations(ctx context.Context) ([]extbridge.Conversation, error) {
	if !b.inProject(ctx) {
		return nil, nil
	}
	return b.store.List()
}

func (b *backend) ResumeConversation(ctx context.Context, id string) (*extbridge.ConversationSnapshot, error) {
	if !b.inProject(ctx) {
		return nil, extbridge.ErrUnknownConversation
	}
	c, err := b.store.Load(id)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.active = id
	b.mu.Unlock()
	return &extbridge.ConversationSnapshot{ConversationID: id, Messages: c.Messages}, nil
}

// NewSession is called for the panel's new_session and for its "New chat"
// button (the user_message "/clear", which the hub turns into NewSession).
func (b *backend) NewSession(context.Context, extbridge.SessionOptions) (*extbridge.ConversationSnapshot, error) {
	b.mu.Lock()
	b.active = NewID() // stored with its first message
	b.mu.Unlock()
	b.out.print("panel: new chat")
	return &extbridge.ConversationSnapshot{}, nil
}

func (b *backend) UserMessage(_ context.Context, m extbridge.UserMessage, r *extbridge.Reply) error {
	if m.Content != "" {
		if _, err := b.hist.Add(m.Content); err != nil {
			return err
		}
	}
	if m.ThreadID != "" {
		// Protocol 2: the panel names the conversation it follows.
		b.mu.Lock()
		b.active = m.ThreadID
		b.mu.Unlock()
	}
	conv := b.activeID()
	if err := b.store.Append(conv, Message{Role: "user", Content: m.Content, Attachments: m.Attachments}); err != nil {
		return err
	}
	if n := max(len(m.Attachments), len(m.Images)); n > 0 {
		b.out.printf("panel: %s [%d attachment(s)]", safeprint.Line(m.Content), n)
	} else {
		b.out.printf("panel: %s", safeprint.Line(m.Content))
	}
	return b.reply(r, conv, m.Content)
}

func (b *backend) ListHistory(ctx context.Context) ([]string, error) {
	if !b.inProject(ctx) {
		return nil, nil
	}
	return b.hist.Entries(), nil
}

// toolNeedsApproval gates the panel's tool requests: Echo always asks.
func (b *backend) toolNeedsApproval(_ context.Context, req *extbridge.ToolRequest) bool {
	if req.ToolName != echoToolName {
		return false
	}
	b.out.printf("panel: tool request %s %s needs approval (answer in the panel, or: pending, then approve ID)",
		safeprint.Line(req.ToolName), safeprint.Line(req.ToolArgs))
	return true
}

// echoToolName is browserhub's one tool: tool_args {"text":T} → output T.
const echoToolName = "Echo"

func echoTool(ctx context.Context, req *extbridge.ToolRequest) (*extbridge.ToolResponse, error) {
	if req.ToolName != echoToolName {
		return nil, extbridge.ErrUnknownTool
	}
	var args struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal([]byte(req.ToolArgs), &args); err != nil || args.Text == nil {
		return &extbridge.ToolResponse{Error: `Echo needs tool_args {"text": "…"}`}, nil
	}
	return &extbridge.ToolResponse{Success: true, Output: *args.Text}, nil
}

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
