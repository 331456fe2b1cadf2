package extbridge

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// dispatch handles one text frame from an authenticated extension. Frames
// that are not JSON objects with a string type, frames of unknown types and
// malformed frames are ignored; the connection stays open.
func (c *extConn) dispatch(data []byte) {
	typ, frame, err := decodeInbound(data)
	if err != nil {
		c.ignored("malformed", typ, len(data), err)
		return
	}
	h := c.hub
	b := h.opts.Backend
	switch f := frame.(type) {
	case nil:
		c.ignored("unknown type", typ, len(data), nil)
	case *resultFrame:
		h.completeCall(c, f)
	case *approvalResponseFrame:
		h.resolveApproval(f.RequestID, f.Action == approveAction)
	case *toolRequestFrame:
		c.startTool(f)
	case *resumeFrame:
		if f.ID == "" {
			return
		}
		snap, err := b.ResumeConversation(c.ctx, f.ID)
		if err != nil || snap == nil {
			if err != nil && !errors.Is(err, ErrUnknownConversation) {
				h.log.Warn("extbridge: resume_conversation failed", "err", err)
			}
			return
		}
		c.sendSnapshot(snap)
	case *userMessageFrame:
		msg := UserMessage{Content: strings.TrimSpace(f.Content), Attachments: f.Attachments}
		if msg.Content == "" && len(msg.Attachments) == 0 {
			return
		}
		if msg.Content == ClearCommand && len(msg.Attachments) == 0 {
			// The panel's "New chat" button: a new session, not a
			// message for the agent.
			c.newSession()
			return
		}
		if err := b.UserMessage(c.ctx, msg); err != nil {
			h.log.Warn("extbridge: user_message failed", "err", err)
		}
	case *selectModelFrame:
		if f.Model != "" {
			if err := b.SelectModel(c.ctx, f.Model); err != nil {
				h.log.Warn("extbridge: select_model failed", "err", err)
			}
		}
		c.sendModels()
		c.sendMode()
	case *setModeFrame:
		if m := Mode(f.Mode); m.Valid() {
			if err := b.SetMode(c.ctx, m); err != nil {
				h.log.Warn("extbridge: set_mode failed", "err", err)
			}
		}
		c.sendMode()
	case *helloFrame:
		// A repeated hello on an authenticated connection changes nothing.
	case *bareFrame:
		c.dispatchBare(f.Type)
	}
}

func (c *extConn) dispatchBare(typ string) {
	h := c.hub
	b := h.opts.Backend
	switch typ {
	case typeListConvs:
		convs, err := b.ListConversations(c.ctx)
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
	case typeNewSession:
		c.newSession()
	case typeListHistory:
		hist, err := b.ListHistory(c.ctx)
		if err != nil {
			h.log.Warn("extbridge: list_history failed", "err", err)
			hist = nil
		}
		if len(hist) > maxHistoryEntries {
			hist = hist[len(hist)-maxHistoryEntries:]
		}
		c.sendJSON(historyFrame{Type: typeHistory, History: nonNil(hist)})
	case typeListSkills:
		skills, err := b.ListSkills(c.ctx)
		if err != nil {
			h.log.Warn("extbridge: list_skills failed", "err", err)
			skills = nil
		}
		// Each name once: the first (highest-precedence) entry wins.
		seen := make(map[string]struct{}, len(skills))
		unique := make([]Skill, 0, len(skills))
		for _, s := range skills {
			if _, dup := seen[s.Name]; dup || s.Name == "" {
				continue
			}
			seen[s.Name] = struct{}{}
			unique = append(unique, s)
		}
		c.sendJSON(skillsFrame{Type: typeSkills, Skills: unique})
	case typeListModels:
		c.sendModels()
	case typeInterrupt:
		h.cancelTurns()
		if err := b.Interrupt(c.ctx); err != nil {
			h.log.Warn("extbridge: interrupt failed", "err", err)
		}
	case typePing:
		// Keep-alive of newer extensions; reading it refreshed liveness.
	}
}

// newSession answers new_session and the panel's "/clear": the [Backend]
// starts a fresh conversation and the panel gets its (empty) snapshot.
func (c *extConn) newSession() {
	snap, err := c.hub.opts.Backend.NewSession(c.ctx)
	if err != nil {
		c.hub.log.Warn("extbridge: new_session failed", "err", err)
	}
	if snap == nil {
		snap = &Snapshot{}
	}
	c.sendSnapshot(snap)
}

func (c *extConn) sendSnapshot(s *Snapshot) {
	c.sendJSON(snapshotFrame{Type: typeSnapshot, Messages: nonNil(s.Messages), ToolResults: s.ToolResults})
}

func (c *extConn) sendModels() {
	m, err := c.hub.opts.Backend.ListModels(c.ctx)
	if err != nil {
		c.hub.log.Warn("extbridge: list_models failed", "err", err)
		m = Models{}
	}
	c.sendJSON(modelsFrame{Type: typeModels, Models: nonNil(m.Models), Current: m.Current})
}

func (c *extConn) sendMode() {
	m, err := c.hub.opts.Backend.Mode(c.ctx)
	if err != nil || !m.Valid() {
		m = ModeStandard
	}
	c.sendJSON(modeFrame{Type: typeMode, Mode: m})
}
