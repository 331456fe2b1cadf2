package extbridgetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// Defaults of [Options].
const (
	// DefaultOrigin is the Origin the fake sends unless told otherwise: a
	// Chrome extension id (32 letters a-p), as the real extension sends.
	DefaultOrigin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"
	// DefaultVersion is the extension_version of the hello.
	DefaultVersion = "1.9.2"
)

// maxFrame is the largest frame the fake reads.
const maxFrame = 128 << 20

// Options configures a fake extension. The zero value of every field is a
// documented default; nil Options means all defaults (an empty token, which
// a hub refuses).
type Options struct {
	// Token is sent in the browser_hello.
	Token string

	// Origin is the Origin header. Default [DefaultOrigin]. NoOrigin sends
	// none.
	Origin   string
	NoOrigin bool

	// Version is the extension_version of the hello. Default
	// [DefaultVersion].
	Version string

	// Protocol selects the dialect the fake speaks. Default 0, the classic
	// one: the hello carries no protocol_version. 2 (or higher) sends
	// client "extension" and that protocol_version, as the newest opentask
	// extension does; events then arrive as bare AG-UI frames, approvals
	// as interrupts or CUSTOM events, and the methods send protocol-2
	// frames ([Extension.RunInput], [Extension.Resume],
	// [Extension.ApproveTool]).
	Protocol int

	// ProjectDir is the project_dir a protocol-2 fake puts on its
	// project-scoped frames (list_*, select_model, set_mode, new_session,
	// resume_conversation, tool_request). Default "": none.
	ProjectDir string

	// HTTPClient dials the hub: Listener.HTTPClient for a hub served on a
	// [Listener]. Default: a client without keep-alives.
	HTTPClient *http.Client

	// Browser answers browser commands. Default: none; commands are queued
	// for Next (NextCommand) and answered with Reply.
	Browser BrowserHandler

	// Approvals answers approval requests. Default: none; requests are
	// queued for Next and answered with Approve.
	Approvals ApprovalHandler

	// OnFrame, when set, receives every frame not answered by a handler,
	// in the reader goroutine, instead of the Next queue; frames are then
	// not recorded either.
	OnFrame func(Frame)

	// IgnorePings makes the fake leave the hub's WebSocket pings
	// unanswered, as a dead service worker would. OnPing, when set, is
	// called for every ping.
	IgnorePings bool
	OnPing      func()

	// Stalled makes the fake stop reading after the hello ack, so that the
	// hub's writes back up (a stalled extension).
	Stalled bool
}

// BrowserHandler answers browser commands. HandleCommand is called from the
// extension's reader goroutine, one command at a time; a nil result sends
// no answer (the command then times out in the hub).
type BrowserHandler interface {
	HandleCommand(ctx context.Context, cmd *Command) *Result
}

// BrowserHandlerFunc adapts a function to [BrowserHandler].
type BrowserHandlerFunc func(ctx context.Context, cmd *Command) *Result

// HandleCommand calls f(ctx, cmd).
func (f BrowserHandlerFunc) HandleCommand(ctx context.Context, cmd *Command) *Result {
	return f(ctx, cmd)
}

// ApprovalHandler answers approval requests, as a user clicking in the
// panel. HandleApproval returns the action to send ("approve", "reject" or
// anything else, which the hub treats as a rejection); "" sends nothing and
// queues the request for Next instead. It is called from the reader
// goroutine.
type ApprovalHandler interface {
	HandleApproval(ctx context.Context, req *ApprovalRequest) string
}

// ApprovalHandlerFunc adapts a function to [ApprovalHandler].
type ApprovalHandlerFunc func(ctx context.Context, req *ApprovalRequest) string

// HandleApproval calls f(ctx, req).
func (f ApprovalHandlerFunc) HandleApproval(ctx context.Context, req *ApprovalRequest) string {
	return f(ctx, req)
}

// Frame is one frame the hub sent.
type Frame struct {
	Type string // the frame's "type"
	Raw  []byte // the frame as received
}

// IsEvent reports whether the frame is a bare AG-UI event (protocol 2: an
// uppercase type).
func (f Frame) IsEvent() bool {
	return f.Type != "" && strings.ToUpper(f.Type) == f.Type
}

// Decode unmarshals the frame into v.
func (f Frame) Decode(v any) error { return json.Unmarshal(f.Raw, v) }

// Event returns the AG-UI event of a chat_event frame, or the frame
// itself when it is a bare AG-UI event (protocol 2); nil for other frames.
func (f Frame) Event() json.RawMessage {
	if f.IsEvent() {
		return f.Raw
	}
	if f.Type != "chat_event" {
		return nil
	}
	var ce struct {
		Event json.RawMessage `json:"event"`
	}
	if json.Unmarshal(f.Raw, &ce) != nil {
		return nil
	}
	return ce.Event
}

// Command is a browser_command as the extension sees it.
type Command struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	Action     string `json:"action"`
	URL        string `json:"url,omitempty"`
	Selector   string `json:"selector,omitempty"`
	Text       string `json:"text,omitempty"`
	PressEnter bool   `json:"press_enter,omitempty"`
	TimeoutMS  int64  `json:"timeout_ms"`
	Raw        []byte `json:"-"` // the whole frame, for members of newer actions
}

// Result is a browser_result. Reply and the [BrowserHandler] machinery fill
// Type and ID.
type Result struct {
	Type          string `json:"type"`
	ID            string `json:"id"`
	URL           string `json:"url,omitempty"`
	Title         string `json:"title,omitempty"`
	Content       string `json:"content,omitempty"`
	Events        []any  `json:"events,omitempty"`
	Error         string `json:"error,omitempty"` // non-empty: the command failed
	Image         string `json:"image,omitempty"` // base64
	ImageMIMEType string `json:"image_mime_type,omitempty"`
	Tabs          []Tab  `json:"tabs,omitempty"`
}

// Tab is one entry of a tabs result.
type Tab struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"`
}

// ApprovalRequest is an approval_request from the hub. In protocol 2 it is
// read from the CUSTOM approval_request of a tool request (RequestID is
// its tool_call_id), or from a run's tool_call interrupt (RequestID is
// the interrupt id; ToolName and ToolArgs come from the tool call the run
// streamed before it), and Interrupt tells which.
type ApprovalRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	ToolName  string `json:"tool_name"`
	ToolArgs  string `json:"tool_args"`
	Interrupt bool   `json:"-"`
}

// ToolResultFrame is the tool_result frame answering a tool request, as the
// extension receives it (the hub builds it from an extbridge.ToolResponse).
type ToolResultFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Success bool   `json:"success"`
	Output  string `json:"output"`
	Error   string `json:"error"`
}

// ErrClosed is returned (wrapped) by the [Extension]'s methods once its
// connection has ended.
var ErrClosed = errors.New("extbridgetest: connection closed")

// Extension is a connected, authenticated fake extension.
type Extension struct {
	ws          *websocket.Conn
	opts        Options
	closeServer func() // Connect's in-memory server; nil after Dial
	ctx         context.Context
	cancel      context.CancelFunc

	mu      sync.Mutex
	queue   []Frame               // frames for Next
	log     []Frame               // every frame, for Received
	changed chan struct{}         // closed and replaced when queue or done change
	waiters map[string]chan Frame // "type" or "tool_result/ID" → one reply
	calls   map[string]*toolCall  // protocol 2: tool calls streamed, by id
	thread  string                // protocol 2: the threadId of the last RUN_STARTED
	ended   bool                  // the reader has stopped
	err     error                 // why the reader stopped

	ack int // the ack's protocol_version, 0 when absent

	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// toolCall is a tool call a protocol-2 run streamed.
type toolCall struct{ name, args string }

// AckProtocol returns the protocol_version of the hub's browser_hello_ack,
// 0 when it carried none (a classic ack).
func (e *Extension) AckProtocol() int { return e.ack }

// Thread returns the threadId of the last RUN_STARTED a protocol-2 fake
// received: the conversation a protocol-2 panel adopts as active.
func (e *Extension) Thread() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.thread
}

func (e *Extension) p2() bool { return e.opts.Protocol >= 2 }

// scoped adds the options' project dir to a protocol-2 frame.
func (e *Extension) scoped(frame map[string]any) map[string]any {
	if e.p2() && e.opts.ProjectDir != "" {
		frame["project_dir"] = e.opts.ProjectDir
	}
	return frame
}

// DialRaw opens the WebSocket to the hub at url (ws://127.0.0.1:PORT/ws)
// with the options' Origin and ping behaviour, and says nothing: for tests
// of the handshake itself. The response is returned when the hub refused
// the upgrade.
func DialRaw(ctx context.Context, url string, opts *Options) (*websocket.Conn, *http.Response, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	hdr := http.Header{}
	if !o.NoOrigin {
		origin := o.Origin
		if origin == "" {
			origin = DefaultOrigin
		}
		hdr.Set("Origin", origin)
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient: client,
		HTTPHeader: hdr,
		OnPingReceived: func(context.Context, []byte) bool {
			if o.OnPing != nil {
				o.OnPing()
			}
			return !o.IgnorePings
		},
	})
	if err != nil {
		return nil, resp, fmt.Errorf("extbridgetest: %w", err)
	}
	ws.SetReadLimit(maxFrame)
	return ws, resp, nil
}

// Dial connects to the hub at url, sends browser_hello with the options'
// token and waits for browser_hello_ack. The frames after the ack (the
// mode frame first) are available through Next. A refused hello fails with
// the hub's close status (websocket.CloseStatus tells it, 1008).
func Dial(ctx context.Context, url string, opts *Options) (*Extension, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ws, _, err := DialRaw(ctx, url, &o)
	if err != nil {
		return nil, err
	}
	version := o.Version
	if version == "" {
		version = DefaultVersion
	}
	helloFields := map[string]any{"type": "browser_hello", "token": o.Token, "extension_version": version}
	if o.Protocol != 0 {
		helloFields["client"] = "extension"
		helloFields["protocol_version"] = o.Protocol
	}
	hello, _ := json.Marshal(helloFields)
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("extbridgetest: sending hello: %w", err)
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("extbridgetest: waiting for browser_hello_ack: %w", err)
	}
	if frameType(data) != "browser_hello_ack" {
		ws.CloseNow()
		return nil, fmt.Errorf("extbridgetest: expected browser_hello_ack, got %.64q", data)
	}
	var ack struct {
		ProtocolVersion int `json:"protocol_version"`
	}
	_ = json.Unmarshal(data, &ack)
	e := &Extension{
		ws:      ws,
		opts:    o,
		ack:     ack.ProtocolVersion,
		calls:   map[string]*toolCall{},
		changed: make(chan struct{}),
		waiters: map[string]chan Frame{},
		done:    make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if o.Stalled {
		e.finish(nil)
		return e, nil
	}
	e.wg.Add(1)
	go e.readLoop()
	return e, nil
}

// Connect serves h (an extbridge.Hub, or a mux it is mounted on) in memory
// and dials it: the connections are net.Pipe pairs reporting loopback
// addresses. Close ends the connection and the in-memory server. Created
// inside a testing/synctest bubble, the connection follows the bubble's
// fake clock.
func Connect(ctx context.Context, h http.Handler, opts *Options) (*Extension, error) {
	l := NewListener()
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	stop := func() {
		srv.Close()
		<-served
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.HTTPClient = l.HTTPClient()
	e, err := Dial(ctx, l.URL(), &o)
	if err != nil {
		stop()
		return nil, err
	}
	e.closeServer = stop
	return e, nil
}

func (e *Extension) readLoop() {
	defer e.wg.Done()
	// Reads and the handlers' answers use no deadline (a context that can
	// end costs coder/websocket a timer per call): Close ends them by
	// closing the socket.
	for {
		_, data, err := e.ws.Read(context.Background())
		if err != nil {
			e.finish(err)
			return
		}
		e.handle(Frame{Type: frameType(data), Raw: data})
	}
}

// handle records one frame, then answers, routes or queues it. Recording
// comes first, so that a frame is in Received before the hub can see the
// answer to it.
func (e *Extension) handle(f Frame) {
	if e.opts.OnFrame == nil {
		e.mu.Lock()
		e.log = append(e.log, f)
		e.mu.Unlock()
	}
	if e.answer(f) {
		return
	}
	if e.opts.OnFrame != nil {
		e.opts.OnFrame(f)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.takeWaiterLocked(f); w != nil {
		w <- f
		return
	}
	e.queue = append(e.queue, f)
	e.notifyLocked()
}

// answer passes browser commands and approval requests to their handlers,
// and reports whether the frame was answered.
func (e *Extension) answer(f Frame) bool {
	switch f.Type {
	case "browser_command":
		if e.opts.Browser == nil {
			return false
		}
		var cmd Command
		if json.Unmarshal(f.Raw, &cmd) != nil {
			return false
		}
		cmd.Raw = f.Raw
		if res := e.opts.Browser.HandleCommand(e.ctx, &cmd); res != nil {
			_ = e.Reply(context.Background(), cmd.ID, res)
		}
		return true
	case "TOOL_CALL_START", "TOOL_CALL_ARGS", "RUN_STARTED":
		e.track(f)
		return false
	case "CUSTOM", "RUN_FINISHED":
		if e.opts.Approvals == nil {
			return false
		}
		req, ok := e.p2Approval(f)
		if !ok {
			return false
		}
		action := e.opts.Approvals.HandleApproval(e.ctx, req)
		if action == "" {
			return false
		}
		if req.Interrupt {
			_ = e.Resume(context.Background(), ResumeEntry{InterruptID: req.RequestID, Status: resumeStatus(action)})
		} else {
			_ = e.ApproveTool(context.Background(), req.RequestID, action == "approve")
		}
		return true
	case "approval_request":
		if e.opts.Approvals == nil {
			return false
		}
		var req ApprovalRequest
		if json.Unmarshal(f.Raw, &req) != nil {
			return false
		}
		action := e.opts.Approvals.HandleApproval(e.ctx, &req)
		if action == "" {
			return false
		}
		_ = e.Approve(context.Background(), req.RequestID, action)
		return true
	}
	return false
}

func resumeStatus(action string) string {
	if action == "approve" {
		return "resolved"
	}
	return "cancelled"
}

// track records the tool calls and the thread a protocol-2 run streams.
func (e *Extension) track(f Frame) {
	var ev struct {
		ThreadID     string `json:"threadId"`
		ToolCallID   string `json:"toolCallId"`
		ToolCallName string `json:"toolCallName"`
		Delta        string `json:"delta"`
	}
	if json.Unmarshal(f.Raw, &ev) != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch f.Type {
	case "RUN_STARTED":
		e.thread = ev.ThreadID
	case "TOOL_CALL_START":
		if len(e.calls) > 1024 {
			clear(e.calls)
		}
		e.calls[ev.ToolCallID] = &toolCall{name: ev.ToolCallName}
	case "TOOL_CALL_ARGS":
		if c := e.calls[ev.ToolCallID]; c != nil {
			c.args += ev.Delta
		}
	}
}

// p2Approval reads an approval prompt from a protocol-2 frame: a CUSTOM
// approval_request, or the first tool_call interrupt of a RUN_FINISHED.
func (e *Extension) p2Approval(f Frame) (*ApprovalRequest, bool) {
	var ev struct {
		Name  string `json:"name"`
		Value struct {
			ToolName   string `json:"tool_name"`
			ToolArgs   string `json:"tool_args"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"value"`
		Outcome struct {
			Type       string      `json:"type"`
			Interrupts []Interrupt `json:"interrupts"`
		} `json:"outcome"`
	}
	if json.Unmarshal(f.Raw, &ev) != nil {
		return nil, false
	}
	if f.Type == "CUSTOM" {
		if ev.Name != "approval_request" || ev.Value.ToolCallID == "" {
			return nil, false
		}
		return &ApprovalRequest{Type: "approval_request", RequestID: ev.Value.ToolCallID,
			ToolName: ev.Value.ToolName, ToolArgs: ev.Value.ToolArgs}, true
	}
	if ev.Outcome.Type != "interrupt" {
		return nil, false
	}
	for _, it := range ev.Outcome.Interrupts {
		if it.Reason != "tool_call" {
			continue
		}
		req := &ApprovalRequest{Type: "approval_request", RequestID: it.ID, Interrupt: true}
		e.mu.Lock()
		if c := e.calls[it.ToolCallID]; c != nil {
			req.ToolName, req.ToolArgs = c.name, c.args
		}
		e.mu.Unlock()
		return req, true
	}
	return nil, false
}

// Interrupt is one interrupt of a protocol-2 RUN_FINISHED outcome.
type Interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	ToolCallID     string          `json:"toolCallId"`
	ResponseSchema json.RawMessage `json:"responseSchema"`
}

// ResumeEntry answers one interrupt in a protocol-2 resume.
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // "resolved" or "cancelled"
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// takeWaiterLocked returns the waiter of a reply to Request or CallTool.
func (e *Extension) takeWaiterLocked(f Frame) chan Frame {
	if len(e.waiters) == 0 {
		return nil
	}
	key := f.Type
	if f.Type == "tool_result" {
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(f.Raw, &r) == nil {
			if w, ok := e.waiters["tool_result/"+r.ID]; ok {
				delete(e.waiters, "tool_result/"+r.ID)
				return w
			}
		}
	}
	w := e.waiters[key]
	delete(e.waiters, key)
	return w
}

func (e *Extension) notifyLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// finish records why the reader stopped and wakes everyone waiting.
func (e *Extension) finish(err error) {
	e.mu.Lock()
	e.ended, e.err = true, err
	e.notifyLocked()
	e.mu.Unlock()
	close(e.done)
}

// frameType reads a frame's type, quickly when the frame starts with it as
// the hub's frames do.
func frameType(data []byte) string {
	const prefix = `{"type":"`
	if rest, ok := bytes.CutPrefix(data, []byte(prefix)); ok {
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			switch string(rest[:i]) { // the common types without allocating
			case "browser_command":
				return "browser_command"
			case "chat_event":
				return "chat_event"
			}
			return string(rest[:i])
		}
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &head)
	return head.Type
}

// Next returns the next queued frame the hub sent, in order, waiting until
// one arrives, ctx is done, or the connection ends ([ErrClosed]).
func (e *Extension) Next(ctx context.Context) (Frame, error) {
	for {
		e.mu.Lock()
		if len(e.queue) > 0 {
			f := e.queue[0]
			e.queue[0] = Frame{}
			e.queue = e.queue[1:]
			e.mu.Unlock()
			return f, nil
		}
		if e.ended {
			err := e.closedErrLocked()
			e.mu.Unlock()
			return Frame{}, err
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Frame{}, ctx.Err()
		}
	}
}

// NextOfType returns the next queued frame of type typ, dropping the queued
// frames of other types before it (Received still has them).
func (e *Extension) NextOfType(ctx context.Context, typ string) (Frame, error) {
	for {
		f, err := e.Next(ctx)
		if err != nil || f.Type == typ {
			return f, err
		}
	}
}

// NextCommand returns the next queued browser command (commands are queued
// when Options.Browser is nil), dropping other frames before it.
func (e *Extension) NextCommand(ctx context.Context) (*Command, error) {
	f, err := e.NextOfType(ctx, "browser_command")
	if err != nil {
		return nil, err
	}
	cmd := &Command{Raw: f.Raw}
	if err := f.Decode(cmd); err != nil {
		return nil, fmt.Errorf("extbridgetest: decoding browser_command: %w", err)
	}
	return cmd, nil
}

// Received returns every frame the hub sent so far, in order, including
// those answered by handlers and consumed by Next (none when
// Options.OnFrame is set).
func (e *Extension) Received() []Frame {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Frame(nil), e.log...)
}

func (e *Extension) closedErrLocked() error {
	if e.err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, e.err)
	}
	return ErrClosed
}

// Send marshals v and sends it as one text frame.
func (e *Extension) Send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("extbridgetest: %w", err)
	}
	return e.SendRaw(ctx, b)
}

// SendRaw sends data as one text frame, unchecked (garbage included).
func (e *Extension) SendRaw(ctx context.Context, data []byte) error {
	if err := e.ws.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("extbridgetest: %w", err)
	}
	return nil
}

// SendBinary sends data as one binary frame (which the protocol does not
// use).
func (e *Extension) SendBinary(ctx context.Context, data []byte) error {
	if err := e.ws.Write(ctx, websocket.MessageBinary, data); err != nil {
		return fmt.Errorf("extbridgetest: %w", err)
	}
	return nil
}

// Reply sends the browser_result of command id.
func (e *Extension) Reply(ctx context.Context, id string, res *Result) error {
	r := *res
	r.Type, r.ID = "browser_result", id
	return e.Send(ctx, &r)
}

// Approve answers approval request requestID with action ("approve";
// anything else rejects).
func (e *Extension) Approve(ctx context.Context, requestID, action string) error {
	return e.Send(ctx, map[string]string{"type": "approval_response", "request_id": requestID, "action": action})
}

// UserMessage sends a user_message typed in the panel, with optional
// attachments (relayed as they are).
func (e *Extension) UserMessage(ctx context.Context, content string, attachments ...json.RawMessage) error {
	return e.Send(ctx, struct {
		Type        string            `json:"type"`
		Content     string            `json:"content"`
		Attachments []json.RawMessage `json:"attachments,omitempty"`
	}{"user_message", content, attachments})
}

// NewChat sends what the panel's "New chat" button sends: the
// user_message "/clear" (classic), which a hub answers as a new_session,
// or new_session with the project dir (protocol 2).
func (e *Extension) NewChat(ctx context.Context) error {
	if e.p2() {
		return e.Send(ctx, e.scoped(map[string]any{"type": "new_session"}))
	}
	return e.UserMessage(ctx, "/clear")
}

// Image is an attachment of a protocol-2 panel message.
type Image struct {
	Filename, MIMEType, Data string
}

// RunInput sends what a protocol-2 panel sends for a typed message: a
// run_agent_input on thread (the last RUN_STARTED's threadId, "" right
// after new_session) with one user message, a string or, with images,
// content parts (text, then one image part per file).
func (e *Extension) RunInput(ctx context.Context, thread, text string, images ...Image) error {
	var content any = text
	if len(images) > 0 {
		parts := []map[string]any{}
		if text != "" {
			parts = append(parts, map[string]any{"type": "text", "text": text})
		}
		for _, im := range images {
			parts = append(parts, map[string]any{"type": "image", "mimeType": im.MIMEType, "data": im.Data, "filename": im.Filename})
		}
		content = parts
	}
	return e.Send(ctx, map[string]any{"type": "run_agent_input", "input": map[string]any{
		"threadId": thread, "runId": newID(),
		"messages": []map[string]any{{"id": newID(), "role": "user", "content": content}},
	}})
}

// Resume sends a protocol-2 resume: a run_agent_input with no messages and
// the entries answering the suspended run's interrupts.
func (e *Extension) Resume(ctx context.Context, entries ...ResumeEntry) error {
	return e.Send(ctx, map[string]any{"type": "run_agent_input", "input": map[string]any{
		"threadId": e.Thread(), "runId": newID(), "messages": []any{}, "resume": entries,
	}})
}

// ApproveTool answers a protocol-2 tool request's approval (the CUSTOM
// approval_request): approval_response {tool_call_id, approved}.
func (e *Extension) ApproveTool(ctx context.Context, toolCallID string, approved bool) error {
	return e.Send(ctx, map[string]any{"type": "approval_response", "tool_call_id": toolCallID, "approved": approved})
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Interrupt sends interrupt (the panel's stop button). The hub does not
// answer it; a cancelled turn ends with an interrupted frame.
func (e *Extension) Interrupt(ctx context.Context) error {
	return e.Send(ctx, map[string]string{"type": "interrupt"})
}

// Ping sends the JSON keep-alive newer extensions send every 20 s.
func (e *Extension) Ping(ctx context.Context) error {
	return e.Send(ctx, map[string]string{"type": "ping"})
}

// SetMode sends set_mode (the panel's mode picker) and returns the mode
// frame the hub answers with.
func (e *Extension) SetMode(ctx context.Context, mode string) (string, error) {
	f, err := e.Request(ctx, e.scoped(map[string]any{"type": "set_mode", "mode": mode}), "mode")
	if err != nil {
		return "", err
	}
	var m struct {
		Mode string `json:"mode"`
	}
	return m.Mode, f.Decode(&m)
}

// SelectModel sends select_model (the panel's /model menu) and returns
// the models frame the hub answers with (a mode frame follows it).
func (e *Extension) SelectModel(ctx context.Context, model string) (Frame, error) {
	return e.Request(ctx, e.scoped(map[string]any{"type": "select_model", "model": model}), "models")
}

// Reconnected sends what the extension sends after every connect:
// list_conversations, list_skills, list_models, list_history and, when
// lastConversation is not empty, resume_conversation for it. The answers
// are queued for Next.
func (e *Extension) Reconnected(ctx context.Context, lastConversation string) error {
	for _, typ := range []string{"list_conversations", "list_skills", "list_models", "list_history"} {
		if err := e.Send(ctx, e.scoped(map[string]any{"type": typ})); err != nil {
			return err
		}
	}
	if lastConversation == "" {
		return nil
	}
	return e.Send(ctx, e.scoped(map[string]any{"type": "resume_conversation", "id": lastConversation}))
}

// Request sends frame (marshalled; a string is sent as a frame of that
// type with no other member, such as "list_models") and returns the first
// frame of type replyType the hub sends after it, which is not queued for
// Next. It waits until ctx is done when no such frame comes (the hub does
// not answer a resume_conversation with an unknown id, nor an interrupt).
func (e *Extension) Request(ctx context.Context, frame any, replyType string) (Frame, error) {
	if typ, ok := frame.(string); ok {
		frame = e.scoped(map[string]any{"type": typ})
	}
	return e.await(ctx, replyType, func() error { return e.Send(ctx, frame) })
}

// CallTool sends a tool_request with a new id and waits for its
// tool_result.
func (e *Extension) CallTool(ctx context.Context, toolName, toolArgs string) (*ToolResultFrame, error) {
	id := newID()
	f, err := e.await(ctx, "tool_result/"+id, func() error {
		return e.Send(ctx, e.scoped(map[string]any{"type": "tool_request", "id": id, "tool_name": toolName, "tool_args": toolArgs}))
	})
	if err != nil {
		return nil, err
	}
	var r ToolResultFrame
	if err := f.Decode(&r); err != nil {
		return nil, fmt.Errorf("extbridgetest: decoding tool_result: %w", err)
	}
	return &r, nil
}

// await registers a waiter for key, runs send and waits for the reply.
func (e *Extension) await(ctx context.Context, key string, send func() error) (Frame, error) {
	w := make(chan Frame, 1)
	e.mu.Lock()
	if e.ended {
		err := e.closedErrLocked()
		e.mu.Unlock()
		return Frame{}, err
	}
	if _, busy := e.waiters[key]; busy {
		e.mu.Unlock()
		return Frame{}, fmt.Errorf("extbridgetest: already waiting for %s", key)
	}
	e.waiters[key] = w
	e.mu.Unlock()
	drop := func() {
		e.mu.Lock()
		if e.waiters[key] == w {
			delete(e.waiters, key)
		}
		e.mu.Unlock()
	}
	if err := send(); err != nil {
		drop()
		return Frame{}, err
	}
	select {
	case f := <-w:
		return f, nil
	case <-e.done:
		drop()
		select {
		case f := <-w:
			return f, nil
		default:
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return Frame{}, e.closedErrLocked()
	case <-ctx.Done():
		drop()
		return Frame{}, ctx.Err()
	}
}

// Done is closed when the connection has ended (at once for a Stalled
// fake, which never reads).
func (e *Extension) Done() <-chan struct{} { return e.done }

// CloseStatus returns the close code the hub sent, once Done is closed;
// -1 when the connection ended without one.
func (e *Extension) CloseStatus() websocket.StatusCode {
	e.mu.Lock()
	defer e.mu.Unlock()
	return websocket.CloseStatus(e.err)
}

// Conn returns the underlying WebSocket.
func (e *Extension) Conn() *websocket.Conn { return e.ws }

// Close closes the connection at once (no close handshake, as a service
// worker being killed) and waits for the reader goroutine and, after
// [Connect], the in-memory server. It is idempotent.
func (e *Extension) Close() error {
	var err error
	e.closeOnce.Do(func() {
		err = e.ws.CloseNow()
		if errors.Is(err, net.ErrClosed) {
			// The hub, or our reader after a failed read, closed it first:
			// closing is done, which is what Close promises.
			err = nil
		}
		e.cancel()
		e.wg.Wait()
		if e.closeServer != nil {
			e.closeServer()
		}
	})
	return err
}
