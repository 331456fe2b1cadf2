package extbridge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// dispatch handles one text frame from an authenticated extension. Frames
// that are not JSON objects with a string type, frames of unknown types and
// malformed frames are ignored; the connection stays open. It reports
// whether the frame was a browser_result.
func (c *extConn) dispatch(data []byte) bool {
	typ, frame, err := decodeInbound(data)
	if err != nil {
		c.ignored("malformed", typ, len(data), err)
		return false
	}
	h := c.hub
	b := h.opts.Backend
	switch f := frame.(type) {
	case nil:
		c.ignored("unknown type", typ, len(data), nil)
	case *resultFrame:
		h.completeCall(c, f)
		return true
	case *approvalResponseFrame:
		if f.ToolCallID != "" {
			// Protocol 2: {tool_call_id, approved, scope?}. The scope is
			// ignored, as the reference does: an answer decides the call
			// it names and nothing else.
			h.ResolveApproval(f.ToolCallID, f.Approved)
			return false
		}
		h.ResolveApproval(f.RequestID, f.Action == approveAction)
	case *toolRequestFrame:
		c.startTool(f)
	case *resumeFrame:
		if f.ID == "" {
			return false
		}
		ctx, ok := c.scoped(f.ProjectDir)
		if !ok {
			return false
		}
		snap, err := b.ResumeConversation(ctx, f.ID)
		if err != nil || snap == nil {
			if err != nil && !errors.Is(err, ErrUnknownConversation) {
				h.log.Warn("extbridge: resume_conversation failed", "err", err)
			}
			return false
		}
		if snap.ConversationID == "" {
			snap.ConversationID = f.ID
		}
		c.sendSnapshot(snap)
	case *userMessageFrame:
		c.userMessage(UserMessage{Content: strings.TrimSpace(f.Content), Attachments: f.Attachments,
			Images: classicImages(f.Attachments)})
	case *runAgentInputFrame:
		c.runAgentInput(f)
	case *newSessionFrame:
		ctx, ok := c.scoped(f.ProjectDir)
		if !ok {
			return false
		}
		opts := SessionOptions{Model: f.Model, SystemPrompt: f.SystemPrompt, CustomInstructions: f.CustomInstructions,
			SandboxDirectories: f.SandboxDirectories, MaxTurns: max(f.MaxTurns, 0)}
		if m := Mode(f.Mode); m.Valid() {
			opts.Mode = m
		}
		c.newSession(ctx, opts)
	case *selectModelFrame:
		ctx, ok := c.scoped(f.ProjectDir)
		if !ok {
			return false
		}
		if f.Model != "" {
			if err := b.SelectModel(ctx, f.Model); err != nil {
				h.log.Warn("extbridge: select_model failed", "err", err)
			}
		}
		c.sendModels(ctx)
		c.sendMode(ctx)
	case *setModeFrame:
		ctx, ok := c.scoped(f.ProjectDir)
		if !ok {
			return false
		}
		if m := Mode(f.Mode); m.Valid() {
			if err := b.SetMode(ctx, m); err != nil {
				h.log.Warn("extbridge: set_mode failed", "err", err)
			}
		}
		c.sendMode(ctx)
	case *helloFrame:
		// A repeated hello on an authenticated connection changes nothing.
	case *bareFrame:
		ctx, ok := c.scoped(f.ProjectDir)
		if !ok {
			return false
		}
		c.dispatchBare(ctx, f.Type)
	}
	return false
}

// userMessage delivers a panel message of either dialect.
func (c *extConn) userMessage(msg UserMessage) {
	if msg.Content == "" && len(msg.Attachments) == 0 && len(msg.Images) == 0 {
		return
	}
	if msg.Content == ClearCommand && len(msg.Attachments) == 0 && len(msg.Images) == 0 {
		// The panel's "New chat" button: a new session, not a message for
		// the agent.
		c.newSession(c.ctx, SessionOptions{})
		return
	}
	if msg.ThreadID != "" {
		c.hub.setThread(msg.ThreadID)
	}
	if err := c.hub.opts.Backend.UserMessage(c.ctx, msg, c.hub.newReply(c.ctx)); err != nil {
		c.hub.log.Warn("extbridge: user_message failed", "err", err)
	}
}

func (c *extConn) dispatchBare(ctx context.Context, typ string) {
	h := c.hub
	b := h.opts.Backend
	switch typ {
	case typeListConvs:
		convs, err := b.ListConversations(ctx)
		if err != nil {
			h.log.Warn("extbridge: list_conversations failed", "err", err)
			convs = nil
		}
		// Newest first, whatever order the backend used.
		sorted := slices.Clone(convs)
		slices.SortStableFunc(sorted, func(a, b Conversation) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
		wire := make([]wireConversation, len(sorted))
		for i, cv := range sorted {
			wire[i] = wireConversation{
				ID: cv.ID, Title: cv.Title, MessageCount: cv.MessageCount,
				UpdatedAt: cv.UpdatedAt.UTC().Format(time.RFC3339),
			}
		}
		c.sendJSON(conversationsFrame{Type: typeConversations, Conversations: wire})
	case typeListHistory:
		hist, err := b.ListHistory(ctx)
		if err != nil {
			h.log.Warn("extbridge: list_history failed", "err", err)
			hist = nil
		}
		if len(hist) > maxHistoryEntries {
			hist = hist[len(hist)-maxHistoryEntries:]
		}
		c.sendJSON(historyFrame{Type: typeHistory, History: nonNil(hist)})
	case typeListSkills:
		skills, err := b.ListSkills(ctx)
		if err != nil {
			h.log.Warn("extbridge: list_skills failed", "err", err)
			skills = nil
		}
		// Each name once: the first (highest-precedence) entry wins.
		seen := make(map[string]struct{}, len(skills))
		unique := make([]PanelSkill, 0, len(skills))
		for _, s := range skills {
			if _, dup := seen[s.Name]; dup || s.Name == "" {
				continue
			}
			seen[s.Name] = struct{}{}
			unique = append(unique, s)
		}
		c.sendJSON(skillsFrame{Type: typeSkills, Skills: unique})
	case typeListModels:
		c.sendModels(ctx)
	case typeInterrupt:
		h.cancelTurns()
		if err := b.Interrupt(ctx); err != nil {
			h.log.Warn("extbridge: interrupt failed", "err", err)
		}
	case typePing:
		// Keep-alive of newer extensions; reading it refreshed liveness.
	}
}

// newSession answers new_session and the panel's "/clear": the [Backend]
// starts a fresh conversation and the panel gets its (empty) snapshot.
func (c *extConn) newSession(ctx context.Context, opts SessionOptions) {
	snap, err := c.hub.opts.Backend.NewSession(ctx, opts)
	if err != nil {
		c.hub.log.Warn("extbridge: new_session failed", "err", err)
	}
	if snap == nil {
		snap = &ConversationSnapshot{}
	}
	c.sendSnapshot(snap)
}

// sendSnapshot sends a conversation's history in the connection's dialect:
// conversation_snapshot, or an AG-UI MESSAGES_SNAPSHOT event.
func (c *extConn) sendSnapshot(s *ConversationSnapshot) {
	if s.ConversationID != "" {
		c.hub.setThread(s.ConversationID)
	}
	if !c.p2() {
		c.sendJSON(snapshotFrame{Type: typeSnapshot, Messages: nonNil(s.Messages), ToolResults: s.ToolResults})
		return
	}
	e, err := MessagesSnapshot(agMessages(s))
	if err != nil {
		c.hub.log.Error("extbridge: encoding snapshot", "err", err)
		return
	}
	c.sendEvent(e)
}

func (c *extConn) sendModels(ctx context.Context) {
	m, err := c.hub.opts.Backend.ListModels(ctx)
	if err != nil {
		c.hub.log.Warn("extbridge: list_models failed", "err", err)
		m = Models{}
	}
	c.sendJSON(modelsFrame{Type: typeModels, Models: nonNil(m.Models), Current: m.Current})
}

func (c *extConn) sendMode(ctx context.Context) {
	m, err := c.hub.opts.Backend.Mode(ctx)
	if err != nil || !m.Valid() {
		m = ModeStandard
	}
	c.sendJSON(modeFrame{Type: typeMode, Mode: m})
}
