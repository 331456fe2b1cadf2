package extbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// ChatEventType is an AG-UI event's "type". The zero value is no type: an
// event without one is invalid.
type ChatEventType string

// The AG-UI event types the panel renders. Other types are relayed as they
// are ([NewChatEvent]).
const (
	EventRunStarted         ChatEventType = "RUN_STARTED"
	EventRunFinished        ChatEventType = "RUN_FINISHED"
	EventRunError           ChatEventType = "RUN_ERROR"
	EventTextMessageStart   ChatEventType = "TEXT_MESSAGE_START"
	EventTextMessageContent ChatEventType = "TEXT_MESSAGE_CONTENT"
	EventTextMessageEnd     ChatEventType = "TEXT_MESSAGE_END"
	EventToolCallStart      ChatEventType = "TOOL_CALL_START"
	EventToolCallArgs       ChatEventType = "TOOL_CALL_ARGS"
	EventToolCallEnd        ChatEventType = "TOOL_CALL_END"
	EventToolCallResult     ChatEventType = "TOOL_CALL_RESULT"
	EventStateSnapshot      ChatEventType = "STATE_SNAPSHOT"
	EventMessagesSnapshot   ChatEventType = "MESSAGES_SNAPSHOT"
	EventCustom             ChatEventType = "CUSTOM"
)

// ChatEvent is one AG-UI event of the panel's chat, held as its JSON
// object: what [Hub.Emit] mirrors (wrapped in a chat_event frame for
// classic extensions, bare in protocol 2). Make one with a typed
// constructor ([TextMessageContent], [RunStarted], …) or from raw JSON
// with [NewChatEvent]. The zero ChatEvent is invalid. (It is not an
// agentproto.Event, which is a notice of the native bridge.)
type ChatEvent struct {
	raw []byte
	typ ChatEventType
}

// NewChatEvent checks raw as an AG-UI event (a JSON object with a non-empty
// string "type", no duplicate keys, a non-empty delta for
// TEXT_MESSAGE_CONTENT) and returns it as an [ChatEvent], copied. Unknown event
// types and fields are relayed unchanged.
func NewChatEvent(raw json.RawMessage) (ChatEvent, error) {
	var typ ChatEventType
	var delta []byte
	err := strictjson.Fields(raw, func(key, value []byte) error {
		switch string(key) {
		case "type":
			if json.Unmarshal(value, &typ) != nil {
				return ErrInvalidEvent
			}
		case "delta":
			delta = value
		}
		return nil
	})
	if err != nil {
		return ChatEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if typ == "" {
		return ChatEvent{}, fmt.Errorf("%w: no type", ErrInvalidEvent)
	}
	if typ == EventTextMessageContent {
		var d string
		if json.Unmarshal(delta, &d) != nil || d == "" {
			return ChatEvent{}, fmt.Errorf("%w: TEXT_MESSAGE_CONTENT needs a non-empty delta", ErrInvalidEvent)
		}
	}
	var compact bytes.Buffer
	compact.Grow(len(raw))
	if err := json.Compact(&compact, raw); err != nil {
		return ChatEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	return ChatEvent{raw: compact.Bytes(), typ: typ}, nil
}

// Type returns the event's type, "" for the zero [ChatEvent].
func (e ChatEvent) Type() ChatEventType { return e.typ }

// MarshalJSON returns the event's JSON object.
func (e ChatEvent) MarshalJSON() ([]byte, error) {
	if e.raw == nil {
		return nil, ErrInvalidEvent
	}
	return e.raw, nil
}

// String returns the event's JSON.
func (e ChatEvent) String() string { return string(e.raw) }

func mustEvent(typ ChatEventType, v any) ChatEvent {
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings and booleans are marshalled here.
		panic(err)
	}
	return ChatEvent{raw: b, typ: typ}
}

// RunStarted is the RUN_STARTED event opening a turn.
func RunStarted(threadID, runID string) ChatEvent {
	return mustEvent(EventRunStarted, struct {
		Type     ChatEventType `json:"type"`
		ThreadID string        `json:"threadId"`
		RunID    string        `json:"runId"`
	}{EventRunStarted, threadID, runID})
}

// RunFinished is the RUN_FINISHED event closing a turn.
func RunFinished(threadID, runID string) ChatEvent {
	return mustEvent(EventRunFinished, struct {
		Type     ChatEventType `json:"type"`
		ThreadID string        `json:"threadId"`
		RunID    string        `json:"runId"`
	}{EventRunFinished, threadID, runID})
}

// RunError is the RUN_ERROR event: the turn failed with message (and an
// optional code).
func RunError(message, code string) ChatEvent {
	return mustEvent(EventRunError, struct {
		Type    ChatEventType `json:"type"`
		Message string        `json:"message"`
		Code    string        `json:"code,omitempty"`
	}{EventRunError, message, code})
}

// TextMessageStart opens a text message of role ("assistant" usually).
func TextMessageStart(messageID, role string) ChatEvent {
	return mustEvent(EventTextMessageStart, struct {
		Type      ChatEventType `json:"type"`
		MessageID string        `json:"messageId"`
		Role      string        `json:"role,omitempty"`
	}{EventTextMessageStart, messageID, role})
}

// TextMessageContent is a chunk of a text message. delta must not be empty
// (Emit refuses an empty one).
func TextMessageContent(messageID, delta string) ChatEvent {
	e := mustEvent(EventTextMessageContent, struct {
		Type      ChatEventType `json:"type"`
		MessageID string        `json:"messageId"`
		Delta     string        `json:"delta"`
	}{EventTextMessageContent, messageID, delta})
	if delta == "" {
		e.typ = "" // invalid: Emit refuses it
	}
	return e
}

// TextMessageEnd closes a text message.
func TextMessageEnd(messageID string) ChatEvent {
	return mustEvent(EventTextMessageEnd, struct {
		Type      ChatEventType `json:"type"`
		MessageID string        `json:"messageId"`
	}{EventTextMessageEnd, messageID})
}

// ToolCallStart opens a tool call shown in the panel.
func ToolCallStart(toolCallID, toolCallName, parentMessageID string) ChatEvent {
	return mustEvent(EventToolCallStart, struct {
		Type            ChatEventType `json:"type"`
		ToolCallID      string        `json:"toolCallId"`
		ToolCallName    string        `json:"toolCallName"`
		ParentMessageID string        `json:"parentMessageId,omitempty"`
	}{EventToolCallStart, toolCallID, toolCallName, parentMessageID})
}

// ToolCallArgs is a chunk of a tool call's arguments.
func ToolCallArgs(toolCallID, delta string) ChatEvent {
	return mustEvent(EventToolCallArgs, struct {
		Type       ChatEventType `json:"type"`
		ToolCallID string        `json:"toolCallId"`
		Delta      string        `json:"delta"`
	}{EventToolCallArgs, toolCallID, delta})
}

// ToolCallEnd closes a tool call's arguments.
func ToolCallEnd(toolCallID string) ChatEvent {
	return mustEvent(EventToolCallEnd, struct {
		Type       ChatEventType `json:"type"`
		ToolCallID string        `json:"toolCallId"`
	}{EventToolCallEnd, toolCallID})
}

// ToolCallResult carries a tool call's output as a tool message.
func ToolCallResult(messageID, toolCallID, content string) ChatEvent {
	return mustEvent(EventToolCallResult, struct {
		Type       ChatEventType `json:"type"`
		MessageID  string        `json:"messageId"`
		ToolCallID string        `json:"toolCallId"`
		Content    string        `json:"content"`
		Role       string        `json:"role"`
	}{EventToolCallResult, messageID, toolCallID, content, "tool"})
}

// StateSnapshot carries the agent's whole state, marshalled from state.
func StateSnapshot(state any) (ChatEvent, error) {
	return valueEvent(EventStateSnapshot, "snapshot", state)
}

// MessagesSnapshot carries the conversation's messages, marshalled from
// messages (a slice of message objects).
func MessagesSnapshot(messages any) (ChatEvent, error) {
	return valueEvent(EventMessagesSnapshot, "messages", messages)
}

// Custom is an application-defined CUSTOM event.
func Custom(name string, value any) (ChatEvent, error) {
	v, err := json.Marshal(value)
	if err != nil {
		return ChatEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	return mustEvent(EventCustom, struct {
		Type  ChatEventType   `json:"type"`
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	}{EventCustom, name, v}), nil
}

func valueEvent(typ ChatEventType, field string, v any) (ChatEvent, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return ChatEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	k, _ := json.Marshal(field)
	raw := make([]byte, 0, len(b)+len(k)+len(typ)+16)
	raw = append(raw, `{"type":"`...)
	raw = append(raw, typ...)
	raw = append(raw, `",`...)
	raw = append(raw, k...)
	raw = append(raw, ':')
	raw = append(raw, b...)
	raw = append(raw, '}')
	return ChatEvent{raw: raw, typ: typ}, nil
}

const chatEventPrefix = `{"type":"chat_event","event":`

// Emit mirrors one AG-UI event to the panel: wrapped in a chat_event frame
// for classic extensions, as a bare event frame in protocol 2. Events are
// sent in the order Emit is called (per calling goroutine). With no
// extension connected the event is dropped, and it is never replayed: a
// panel that connects later asks for the conversation's snapshot instead.
// Emit waits only while the connection's send queue is full. A protocol-2
// extension drops every event that fails AG-UI 1.0's schemas: the
// constructors of this package make valid events, while an event made with
// [NewChatEvent] is relayed as it is. Once Close or Shutdown began Emit
// returns [ErrClosed], except during Shutdown for a turn still running,
// called with the turn's context (or one derived from it): see
// [Hub.Shutdown].
func (h *Hub) Emit(ctx context.Context, e ChatEvent) error {
	if e.typ == "" || e.raw == nil {
		return ErrInvalidEvent
	}
	if h.closedFlag.Load() && !h.drainingFor(ctx) {
		return ErrClosed
	}
	c := h.cur.Load()
	if c == nil {
		return nil
	}
	if err := c.send(ctx, c.eventFrame(e)); err != nil && !errors.Is(err, ErrDisconnected) {
		return err
	}
	return nil
}

// Say mirrors a whole text message of role ("assistant", or "user" to echo
// the user's own panel message, which newer panels show only then):
// TEXT_MESSAGE_START, one TEXT_MESSAGE_CONTENT (skipped when text is
// empty) and TEXT_MESSAGE_END.
func (h *Hub) Say(ctx context.Context, messageID, role, text string) error {
	events := []ChatEvent{TextMessageStart(messageID, role)}
	if text != "" {
		events = append(events, TextMessageContent(messageID, text))
	}
	events = append(events, TextMessageEnd(messageID))
	for _, e := range events {
		if err := h.Emit(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// SendInterrupted tells a classic panel that the running turn ended
// cancelled, so that it clears its working state. Turns run with RunTurn
// send it themselves; call it when a turn the hub does not run is
// cancelled. Protocol 2 has no such frame (a cancelled run ends with
// [RunCancelled]): on a protocol-2 connection it sends nothing.
func (h *Hub) SendInterrupted(ctx context.Context) error {
	c := h.cur.Load()
	if c == nil || c.p2() {
		return nil
	}
	if err := c.send(ctx, interruptedJSON); err != nil && !errors.Is(err, ErrDisconnected) {
		return err
	}
	return nil
}

// RunCancelled is the RUN_FINISHED event of a run that was stopped: outcome
// {"type":"cancelled"}.
func RunCancelled(threadID, runID string) ChatEvent {
	return mustEvent(EventRunFinished, struct {
		Type     ChatEventType `json:"type"`
		ThreadID string        `json:"threadId"`
		RunID    string        `json:"runId"`
		Outcome  struct {
			Type string `json:"type"`
		} `json:"outcome"`
	}{Type: EventRunFinished, ThreadID: threadID, RunID: runID, Outcome: struct {
		Type string `json:"type"`
	}{"cancelled"}})
}

// runFailed is RunTurn's RUN_ERROR: it names the run, so that a protocol-2
// panel ends it (a RUN_ERROR without runId is a routing error that ends no
// run).
func runFailed(threadID, runID, message string) ChatEvent {
	return mustEvent(EventRunError, struct {
		Type     ChatEventType `json:"type"`
		ThreadID string        `json:"threadId"`
		RunID    string        `json:"runId"`
		Message  string        `json:"message"`
	}{EventRunError, threadID, runID, message})
}

// Turn is one agent turn mirrored to the panel, bracketed by RUN_STARTED and
// RUN_FINISHED. Use it through RunTurn.
type Turn struct {
	hub      *Hub
	ThreadID string
	// RunID is the turn's first run. A protocol-2 turn that suspended on
	// an approval or a question continues as a new run: CurrentRunID.
	RunID  string
	cancel context.CancelFunc

	mu  sync.Mutex
	run string
}

// CurrentRunID returns the id of the turn's current run: RunID until the
// turn first suspends on protocol 2, then the continuation run's.
func (t *Turn) CurrentRunID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.run == "" {
		return t.RunID
	}
	return t.run
}

func (t *Turn) setRun(id string) {
	t.mu.Lock()
	t.run = id
	t.mu.Unlock()
}

// Emit mirrors an event of the turn.
func (t *Turn) Emit(ctx context.Context, e ChatEvent) error { return t.hub.Emit(ctx, e) }

// Say mirrors a whole assistant text message: TEXT_MESSAGE_START, one
// TEXT_MESSAGE_CONTENT (skipped when text is empty) and TEXT_MESSAGE_END.
func (t *Turn) Say(ctx context.Context, messageID, text string) error {
	return t.hub.Say(ctx, messageID, "assistant", text)
}

// Echo mirrors the user's own panel message (role "user"): TEXT_MESSAGE_START,
// one TEXT_MESSAGE_CONTENT (skipped when text is empty) and
// TEXT_MESSAGE_END. Panels show a message they sent only once it is
// echoed.
func (t *Turn) Echo(ctx context.Context, messageID, text string) error {
	return t.hub.Say(ctx, messageID, "user", text)
}

// RunTurn runs fn as one turn: it emits RUN_STARTED, calls fn with a context
// that an interrupt frame from the panel cancels, and emits RUN_FINISHED,
// or RUN_ERROR (naming the run) when fn fails. Whenever the turn ends
// cancelled (ctx cancelled, an interrupt from the panel, or fn returning
// context.Canceled) RUN_FINISHED has the outcome {"type":"cancelled"} and,
// for classic panels, the interrupted frame follows. threadID should be
// the conversation id: protocol-2 panels adopt it as their active
// conversation. It returns fn's error, and [ErrClosed] without calling fn
// once Close or Shutdown began. [Hub.Shutdown] waits for a running turn
// and [Hub.Close] cancels fn's context. A [Backend] answering a panel
// message starts its turn with [Reply.StartTurn] instead, which runs
// RunTurn in a goroutine the hub owns.
func (h *Hub) RunTurn(ctx context.Context, threadID, runID string, fn func(ctx context.Context, t *Turn) error) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	t, tctx := h.openTurnLocked(ctx, threadID, runID)
	h.mu.Unlock()
	return h.runTurn(tctx, t, fn)
}

// turnKey is the context key of a running turn's [Turn]: the calls made
// with its context are the turn's, which Shutdown lets finish.
type turnKey struct{}

// openTurnLocked registers a turn of ctx (h.mu held, the hub open), so
// that Shutdown waits for it from now on, and returns it with its context.
func (h *Hub) openTurnLocked(ctx context.Context, threadID, runID string) (*Turn, context.Context) {
	t := &Turn{hub: h, ThreadID: threadID, RunID: runID}
	tctx, cancel := context.WithCancel(context.WithValue(ctx, turnKey{}, t))
	t.cancel = cancel
	h.turns[t] = struct{}{}
	if threadID != "" {
		h.lastThread = threadID
	}
	return t, tctx
}

// runTurn runs the turn t that openTurnLocked registered, and unregisters
// it.
func (h *Hub) runTurn(tctx context.Context, t *Turn, fn func(ctx context.Context, t *Turn) error) error {
	defer t.cancel()
	defer func() {
		h.mu.Lock()
		delete(h.turns, t)
		h.mu.Unlock()
	}()
	if err := h.Emit(tctx, RunStarted(t.ThreadID, t.RunID)); err != nil {
		return err
	}
	err := fn(tctx, t)
	// The turn's context may be cancelled: the closing frames still go out,
	// bounded by the write timeout, as the turn's (it is still registered).
	ectx, ecancel := context.WithTimeout(context.WithoutCancel(tctx), h.opts.WriteTimeout)
	defer ecancel()
	cancelled := errors.Is(err, context.Canceled) || tctx.Err() != nil
	threadID, run := t.ThreadID, t.CurrentRunID()
	switch {
	case err != nil && !cancelled:
		_ = h.Emit(ectx, runFailed(threadID, run, truncate(err.Error(), maxErrorText)))
	case cancelled:
		_ = h.Emit(ectx, RunCancelled(threadID, run))
	default:
		_ = h.Emit(ectx, RunFinished(threadID, run))
	}
	if cancelled {
		_ = h.SendInterrupted(ectx)
	}
	return err
}

// cancelTurns cancels every turn run with RunTurn (the panel's interrupt).
func (h *Hub) cancelTurns() {
	h.mu.Lock()
	turns := make([]*Turn, 0, len(h.turns))
	for t := range h.turns {
		turns = append(turns, t)
	}
	h.mu.Unlock()
	for _, t := range turns {
		t.cancel()
	}
}
