package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
)

// ProtocolVersion is a dialect of the protocol, as the hello's
// protocol_version numbers it. The zero value is no dialect: a
// [ConnInfo] from the hub always has [ProtocolClassic] or [Protocol2].
type ProtocolVersion int

// The dialects the hub speaks, chosen per connection by the hello's
// protocol_version.
const (
	// ProtocolClassic is the dialect of extensions whose hello carries no
	// protocol_version (or one below 2): chat events wrapped in chat_event
	// frames, approval_request frames, conversation_snapshot.
	ProtocolClassic ProtocolVersion = 1
	// Protocol2 is the infer CLI's daemon binding dialect: bare AG-UI 1.0
	// event frames, turns as runs that suspend on interrupts,
	// run_agent_input, project-scoped frames.
	Protocol2 ProtocolVersion = 2
	// MaxProtocolVersion is the highest dialect the hub speaks. A hello
	// naming a higher version is served in this one, and the ack says so
	// (the extension then shows its "update" state instead of failing).
	MaxProtocolVersion = Protocol2
)

// Limits of protocol 2's inbound frames.
const (
	// maxProjectDirLen bounds project_dir; a longer one is refused.
	maxProjectDirLen = 4096
	// maxInputMessages bounds the user messages of one run_agent_input
	// that are delivered; the panel sends one.
	maxInputMessages = 16
	// maxResumeEntries bounds the resume entries of one run_agent_input.
	maxResumeEntries = 256
)

// negotiate chooses a connection's dialect from the hello's raw
// protocol_version and returns it with the ack to send. A hello without the
// field gets exactly the classic ack, which the oldest extensions expect.
// A value that is not an integer counts as absent.
func negotiate(raw json.RawMessage) (ProtocolVersion, []byte) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if errors.Is(err, strconv.ErrRange) && raw[0] != '-' {
		v, err = int64(MaxProtocolVersion), nil // an integer too large for int64 is higher still
	}
	if len(raw) == 0 || err != nil {
		return ProtocolClassic, helloAckJSON
	}
	proto := ProtocolClassic
	if v >= int64(Protocol2) {
		proto = MaxProtocolVersion
	}
	return proto, []byte(`{"type":"browser_hello_ack","protocol_version":` + strconv.Itoa(int(proto)) + `}`)
}

func (c *extConn) p2() bool { return c.info.ProtocolVersion >= Protocol2 }

type projectKey struct{}

// ProjectDir returns the project directory a protocol-2 extension scoped
// the current [Backend] or [ToolHandler] call to (project_dir of
// list_conversations, list_history, list_skills, list_models,
// select_model, set_mode, new_session, resume_conversation and
// tool_request), or "" when the frame named none, as classic extensions
// never do. The hub only passes absolute paths of at most 4096 bytes: a
// frame with any other project_dir is answered with a RUN_ERROR without
// runId, as the reference CLI does, and the Backend is not called.
func ProjectDir(ctx context.Context) string {
	dir, _ := ctx.Value(projectKey{}).(string)
	return dir
}

// scoped returns the connection's context carrying project dir dir, and
// false (after answering the extension) when dir is unusable.
func (c *extConn) scoped(dir string) (context.Context, bool) {
	if dir == "" {
		return c.ctx, true
	}
	if !validProjectDir(dir) {
		c.ignored("unusable project_dir", "", len(dir), nil)
		c.sendEvent(mustEvent(EventRunError, struct {
			Type    ChatEventType `json:"type"`
			Message string        `json:"message"`
		}{EventRunError, "project_dir must be an absolute path"}))
		return nil, false
	}
	return withProject(c.ctx, dir), true
}

func validProjectDir(dir string) bool {
	return len(dir) <= maxProjectDirLen && filepath.IsAbs(dir) && !strings.ContainsRune(dir, 0)
}

func withProject(ctx context.Context, dir string) context.Context {
	if dir == "" {
		return ctx
	}
	return context.WithValue(ctx, projectKey{}, dir)
}

// sendEvent queues one AG-UI event in the connection's dialect.
func (c *extConn) sendEvent(e ChatEvent) {
	if err := c.send(c.ctx, c.eventFrame(e)); err != nil {
		c.hub.log.Debug("extbridge: event not sent", "err", err)
	}
}

// eventFrame returns the frame carrying e: the bare event in protocol 2, a
// chat_event frame in the classic dialect.
func (c *extConn) eventFrame(e ChatEvent) []byte {
	if c.p2() {
		return e.raw
	}
	frame := make([]byte, 0, len(chatEventPrefix)+len(e.raw)+1)
	frame = append(frame, chatEventPrefix...)
	frame = append(frame, e.raw...)
	return append(frame, '}')
}

// Image is an image (or other file) attached to a panel message: the
// classic dialect's attachments {filename, mime_type, data} and protocol
// 2's image content parts alike.
type Image struct {
	MIMEType string // e.g. "image/png"
	Data     string // base64, no data: URL prefix
	Filename string // may be empty
}

// contentPart is one part of a protocol-2 user message: the reference
// extension's {type:"image", mimeType, data, filename} and AG-UI 1.0's
// {type:"image", source:{type:"data", value, mimeType}} are both read.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"`
	Filename string `json:"filename"`
	Source   *struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MIMEType string `json:"mimeType"`
	} `json:"source"`
}

// parseContent reads a user message's content, a string or content parts,
// into its text (text parts joined by newlines) and images. Parts the hub
// does not understand are skipped.
func parseContent(raw json.RawMessage) (string, []Image, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, true
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return "", nil, false
	}
	var texts []string
	var images []Image
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
		case "image", "document", "file":
			img := Image{MIMEType: p.MIMEType, Data: p.Data, Filename: p.Filename}
			if p.Source != nil && p.Source.Type == "data" {
				img.Data, img.MIMEType = p.Source.Value, p.Source.MIMEType
			}
			if img.Data != "" {
				images = append(images, img)
			}
		}
	}
	return strings.Join(texts, "\n"), images, true
}

// classicImages reads classic attachments of the reference extension's
// shape {filename, mime_type, data}; others are left to
// UserMessage.Attachments.
func classicImages(attachments []json.RawMessage) []Image {
	var out []Image
	for _, a := range attachments {
		var f struct {
			Filename string `json:"filename"`
			MIMEType string `json:"mime_type"`
			Data     string `json:"data"`
		}
		if json.Unmarshal(a, &f) == nil && f.Data != "" && f.MIMEType != "" {
			out = append(out, Image{MIMEType: f.MIMEType, Data: f.Data, Filename: f.Filename})
		}
	}
	return out
}

// runAgentInput handles protocol 2's run_agent_input: resume entries
// answer open interrupts (each entry by its interruptId; the first answer
// wins, as in the panel or the terminal), new user messages reach
// [Backend.UserMessage].
func (c *extConn) runAgentInput(f *runAgentInputFrame) {
	in := f.Input
	if in == nil {
		return
	}
	h := c.hub
	for i, r := range in.Resume {
		if i >= maxResumeEntries {
			break
		}
		h.resolveInterrupt(r.InterruptID, r.Status == "resolved", r.Payload)
	}
	n := 0
	for _, m := range in.Messages {
		if m.Role != "user" || n >= maxInputMessages {
			continue
		}
		n++
		text, images, ok := parseContent(m.Content)
		if !ok {
			c.ignored("user message content is neither text nor parts", typeRunAgentInput, len(m.Content), nil)
			continue
		}
		c.userMessage(UserMessage{
			Content: strings.TrimSpace(text), Images: images,
			ThreadID: in.ThreadID, RunID: in.RunID, MessageID: m.ID,
		})
	}
}

// agMessage is an AG-UI 1.0 message as MESSAGES_SNAPSHOT carries it.
type agMessage struct {
	ID         string           `json:"id"`
	Role       string           `json:"role"`
	Content    *json.RawMessage `json:"content,omitempty"`
	ToolCalls  []agToolCall     `json:"toolCalls,omitempty"`
	ToolCallID string           `json:"toolCallId,omitempty"`
	Error      string           `json:"error,omitempty"`
	Name       string           `json:"name,omitempty"`
}

type agToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// gatewayMessage reads a stored message in the gateway's snake_case shape
// or already in AG-UI's camelCase one.
type gatewayMessage struct {
	ID json.RawMessage `json:"id"` // a string, or a number some stores use

	Role        string          `json:"role"`
	Content     json.RawMessage `json:"content"`
	Name        string          `json:"name"`
	ToolCalls   []gatewayCall   `json:"tool_calls"`
	ToolCallsAG []gatewayCall   `json:"toolCalls"`
	ToolCallID  string          `json:"tool_call_id"`
	ToolCallAG  string          `json:"toolCallId"`
	Error       *string         `json:"error"`
}

type gatewayCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// agMessages renders a [ConversationSnapshot]'s messages as AG-UI 1.0 messages: every
// message gets an id (its own, else one derived from its position), tool
// calls and tool call ids are camelCase, content is text where AG-UI wants
// text, and a tool call ToolResults marks failed carries an error. Messages
// of roles AG-UI does not know, and tool messages without a tool call id,
// are left out.
func agMessages(s *ConversationSnapshot) []agMessage {
	out := make([]agMessage, 0, len(s.Messages))
	prefix := s.ConversationID
	if prefix == "" {
		prefix = "msg"
	}
	for i, raw := range s.Messages {
		var g gatewayMessage
		if json.Unmarshal(raw, &g) != nil {
			continue
		}
		m := agMessage{ID: idText(g.ID), Role: g.Role, Name: g.Name}
		if m.ID == "" {
			m.ID = prefix + "-" + strconv.Itoa(i)
		}
		text, parts := messageText(g.Content)
		switch g.Role {
		case "user":
			if parts != nil {
				m.Content = &parts
			} else {
				m.Content = jsonText(text)
			}
		case "system", "developer", "reasoning":
			m.Content = jsonText(text)
			m.Name = nameIf(g.Role != "reasoning", m.Name)
		case "assistant":
			if text != "" {
				m.Content = jsonText(text)
			}
			calls := g.ToolCalls
			if len(calls) == 0 {
				calls = g.ToolCallsAG
			}
			for j, tc := range calls {
				call := agToolCall{ID: tc.ID, Type: "function"}
				if call.ID == "" {
					call.ID = m.ID + "-call-" + strconv.Itoa(j)
				}
				call.Function.Name = tc.Function.Name
				call.Function.Arguments = argumentsText(tc.Function.Arguments)
				m.ToolCalls = append(m.ToolCalls, call)
			}
		case "tool":
			m.ToolCallID = g.ToolCallID
			if m.ToolCallID == "" {
				m.ToolCallID = g.ToolCallAG
			}
			if m.ToolCallID == "" {
				continue
			}
			m.Content = jsonText(text)
			m.Name = ""
			if g.Error != nil && *g.Error != "" {
				m.Error = *g.Error
			} else if ok, known := s.ToolResults[m.ToolCallID]; known && !ok {
				m.Error = "the tool call failed"
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// idText returns a stored id as text: a string as is, a number as
// written; "" for anything else.
func idText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func nameIf(keep bool, name string) string {
	if keep {
		return name
	}
	return ""
}

// messageText returns a stored content's text: a string as is, text parts
// joined; parts are also returned raw (for user messages, which may carry
// them) when they are an array.
func messageText(raw json.RawMessage) (string, json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return "", nil
	}
	var texts []string
	clean := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
			clean = append(clean, map[string]any{"type": "text", "text": p.Text})
		case "image":
			src := map[string]any{"type": "data", "value": p.Data, "mimeType": p.MIMEType}
			if p.Source != nil && p.Source.Type == "data" {
				src = map[string]any{"type": "data", "value": p.Source.Value, "mimeType": p.Source.MIMEType}
			}
			if src["value"] != "" && src["mimeType"] != "" {
				clean = append(clean, map[string]any{"type": "image", "source": src})
			}
		}
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return strings.Join(texts, "\n"), nil
	}
	return strings.Join(texts, "\n"), b
}

// argumentsText returns a tool call's arguments as the JSON text AG-UI
// carries: a string as is, any other JSON value as its text.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func jsonText(s string) *json.RawMessage {
	b, _ := json.Marshal(s)
	r := json.RawMessage(b)
	return &r
}
