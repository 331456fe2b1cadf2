package extbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/internal/jsonstr"
	"github.com/agentbridge/agentbridge/internal/strictjson"
	"github.com/agentbridge/agentbridge/internal/uuid"
)

// CommandAction is a browser command's action. The zero value is no action: a
// command without one is refused ([ErrInvalidCommand]). Actions newer than
// this package are sent as they are, with [BrowserCommand.Params].
type CommandAction string

// The browser command actions of the protocol.
const (
	ActionNavigate   CommandAction = "navigate"
	ActionClick      CommandAction = "click"
	ActionType       CommandAction = "type"
	ActionRead       CommandAction = "read"
	ActionScreenshot CommandAction = "screenshot"
	ActionTabs       CommandAction = "tabs"
)

// BrowserCommand is one browser_command. Only the fields the action uses
// need be set; empty ones are omitted from the frame.
type BrowserCommand struct {
	Action     CommandAction // required: one of the Action constants, or a newer action
	URL        string
	Selector   string // empty means the document body for read
	Text       string
	PressEnter bool
	// Params holds extra members for actions newer than this package, as a
	// JSON object whose members are added to the frame. Its keys must not
	// repeat the frame's own (type, id, action, timeout_ms, or a field set
	// above).
	Params json.RawMessage
}

// BrowserResult is the extension's browser_result for a command.
type BrowserResult struct {
	URL     string // the controlled tab's URL after the action
	Title   string // its title
	Content string // read: the text read
	// Image is the decoded screenshot image, and ImageMIMEType its type
	// ("image/png" when the extension left it empty).
	Image         []byte
	ImageMIMEType string
	Tabs          []Tab             // tabs: the open tabs
	Events        []json.RawMessage // optional browser notices, relayed
	// Raw is the whole frame as received, for fields of newer actions.
	Raw json.RawMessage
}

// Tab is one open browser tab.
type Tab struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"` // the controlled/active tab
}

// Screenshot is a captured image of the controlled tab.
type Screenshot struct {
	Data     []byte // decoded image bytes
	MIMEType string // e.g. "image/png"
	URL      string // the tab's URL
	Title    string // the tab's title
}

// pendingCall is a browser command waiting for its result.
type pendingCall struct {
	id     string
	action CommandAction
	conn   *extConn // the connection the command was sent on
	// deadline is when the hub stops waiting (guarded by hub.mu): set
	// once the command is sent, zero before and once the wait is over.
	deadline time.Time
	once     sync.Once
	out      callOutcome   // set by finish before done is closed
	done     chan struct{} // closed by the first finish
}

type callOutcome struct {
	res *resultFrame
	err error
}

// errWaitOver is the outcome of a call whose wait ran out (never returned
// as is: Command turns it into a *TimeoutError).
var errWaitOver = errors.New("extbridge: wait over")

func (p *pendingCall) finish(o callOutcome) {
	p.once.Do(func() {
		p.out = o
		close(p.done)
		if p.conn != nil {
			p.conn.interruptTurn(p) // when its caller reads, it stops
		}
	})
}

// callTimer fails the commands whose wait has run out: one timer per hub,
// armed for the earliest deadline of the calls in flight, instead of one
// per command. A call answered in time leaves it alone, so steady traffic
// (every wait as long, later deadlines behind earlier ones) arms it about
// once per wait. Guarded by hub.mu.
type callTimer struct {
	t  *time.Timer // nil until the first command
	at time.Time   // when t fires; zero when it is not armed
}

// armCallLocked starts call's wait (h.mu held), unless the call has been
// answered or dropped already.
func (h *Hub) armCallLocked(call *pendingCall, wait time.Duration) {
	if h.calls[call.id] != call {
		return
	}
	call.deadline = time.Now().Add(wait)
	h.armTimerLocked(call.deadline)
}

// armTimerLocked makes the hub's call timer fire by deadline.
func (h *Hub) armTimerLocked(deadline time.Time) {
	ct := &h.callTimer
	if !ct.at.IsZero() && !deadline.Before(ct.at) {
		return
	}
	ct.at = deadline
	if ct.t == nil {
		ct.t = time.AfterFunc(time.Until(deadline), h.expireCalls)
		return
	}
	ct.t.Reset(time.Until(deadline))
}

// expireCalls is the call timer's function: it ends the wait of every call
// whose deadline has passed and rearms for the earliest one left. Expired
// calls stay registered until their Command drops them, so that a result
// arriving meanwhile is not logged as one for an unknown id.
func (h *Hub) expireCalls() {
	h.mu.Lock()
	now := time.Now()
	var expired []*pendingCall
	var next time.Time
	for _, call := range h.calls {
		switch {
		case call.deadline.IsZero():
		case !call.deadline.After(now):
			call.deadline = time.Time{}
			expired = append(expired, call)
		case next.IsZero() || call.deadline.Before(next):
			next = call.deadline
		}
	}
	h.callTimer.at = time.Time{}
	if !next.IsZero() {
		h.armTimerLocked(next)
	}
	h.mu.Unlock()
	for _, call := range expired {
		call.finish(callOutcome{err: errWaitOver})
	}
}

// Navigate opens url in the controlled tab and returns the tab's URL and
// title after the navigation.
func (h *Hub) Navigate(ctx context.Context, url string) (*BrowserResult, error) {
	return h.Command(ctx, BrowserCommand{Action: ActionNavigate, URL: url})
}

// Click clicks the first element matching selector.
func (h *Hub) Click(ctx context.Context, selector string) (*BrowserResult, error) {
	return h.Command(ctx, BrowserCommand{Action: ActionClick, Selector: selector})
}

// TypeOptions configures [Hub.Type]. nil means all defaults.
type TypeOptions struct {
	// PressEnter presses Enter in the element after typing (submitting a
	// search box, for example). Default false.
	PressEnter bool
}

// Type replaces the value of the element matching selector with text, then
// presses Enter when opts.PressEnter is set. opts may be nil.
func (h *Hub) Type(ctx context.Context, selector, text string, opts *TypeOptions) (*BrowserResult, error) {
	return h.Command(ctx, BrowserCommand{Action: ActionType, Selector: selector, Text: text, PressEnter: opts != nil && opts.PressEnter})
}

// Read returns the text of the element matching selector (the body when
// selector is empty) in the result's Content. The extension is meant to
// redact secrets, but the hub does not rely on it: treat Content as
// untrusted page text.
func (h *Hub) Read(ctx context.Context, selector string) (*BrowserResult, error) {
	return h.Command(ctx, BrowserCommand{Action: ActionRead, Selector: selector})
}

// Screenshot captures the visible part of the controlled tab.
func (h *Hub) Screenshot(ctx context.Context) (*Screenshot, error) {
	res, err := h.Command(ctx, BrowserCommand{Action: ActionScreenshot})
	if err != nil {
		return nil, err
	}
	if len(res.Image) == 0 {
		return nil, &actionError{ActionScreenshot, fmt.Errorf("%w: no image in the result", ErrInvalidResult)}
	}
	return &Screenshot{Data: res.Image, MIMEType: res.ImageMIMEType, URL: res.URL, Title: res.Title}, nil
}

// Tabs lists the open tabs.
func (h *Hub) Tabs(ctx context.Context) ([]Tab, error) {
	res, err := h.Command(ctx, BrowserCommand{Action: ActionTabs})
	if err != nil {
		return nil, err
	}
	return nonNil(res.Tabs), nil
}

// Command sends a browser command to the current extension and waits for
// its result.
//
// The command's timeout_ms is the time left until ctx's deadline, which
// binds the hub too; without a deadline it is HubOptions.CommandTimeout and
// the hub waits ReplyMargin longer. Errors: *[NotConnectedError]
// ([ErrNotConnected]) when no extension is connected, *[TimeoutError]
// ([ErrTimeout]), [ErrDisconnected] when the connection is lost or replaced
// first, *[CommandError] when the extension reports a failure or when the
// hub refuses the command before sending it ([ErrInvalidCommand]: a navigate
// without an absolute URL of an allowed scheme, a click or type without a
// selector),
// [ErrInvalidResult] for a result the hub cannot use, [ErrClosed] once
// Close or Shutdown began (during Shutdown a running turn's commands, made
// with its context, still go: see [Hub.Shutdown]), or ctx's error when it
// is cancelled. When the extension has stopped reading its
// socket, Command may return up to HubOptions.WriteTimeout after ctx is
// cancelled (the connection is then dropped as stalled).
func (h *Hub) Command(ctx context.Context, cmd BrowserCommand) (*BrowserResult, error) {
	if cmd.Action == "" {
		return nil, errors.New("extbridge: browser command without action")
	}
	if err := h.validate(&cmd); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wait := h.opts.CommandTimeout + h.opts.ReplyMargin
	budget := h.opts.CommandTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = time.Until(deadline)
		wait = budget
		if budget < time.Millisecond {
			return nil, &TimeoutError{Action: cmd.Action, cause: context.DeadlineExceeded}
		}
	}
	id := uuid.New()
	frame, err := encodeCommand(id, cmd, budget.Milliseconds())
	if err != nil {
		return nil, err
	}

	call := &pendingCall{id: id, action: cmd.Action, done: make(chan struct{})}
	h.mu.Lock()
	if h.closed && !h.drainingForLocked(ctx) {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	c := h.cur.Load()
	if c == nil {
		h.mu.Unlock()
		return nil, h.notConnected()
	}
	call.conn = c
	h.calls[id] = call
	c.pending.Add(1)
	h.mu.Unlock()

	if err := c.sendNow(ctx, frame); err != nil {
		h.dropCall(call)
		if errors.Is(err, ErrDisconnected) {
			return nil, &actionError{cmd.Action, err}
		}
		return nil, err
	}
	h.mu.Lock()
	h.armCallLocked(call, wait)
	h.mu.Unlock()
	if c.takeTurn(call) {
		// Nobody reads the connection: read the result here (readturn.go).
		var stop func() bool
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() { c.interruptTurn(call) })
		}
		c.readAsCaller(call, ctx.Done())
		if stop != nil {
			stop()
		}
	}
	select {
	case <-call.done:
		// A result or a lost connection has unregistered the call already;
		// a wait that ran out has not.
		o := call.out
		if o.err == errWaitOver {
			h.dropCall(call)
			return nil, waitOver(ctx, cmd.Action)
		}
		if o.err != nil {
			return nil, &actionError{cmd.Action, o.err}
		}
		return resultOf(cmd.Action, o.res)
	case <-ctx.Done():
		h.dropCall(call)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &TimeoutError{Action: cmd.Action, cause: ctx.Err()}
		}
		return nil, ctx.Err()
	}
}

// waitOver is the error of a command whose wait ran out before ctx ended:
// a *TimeoutError caused by ctx's deadline when it has one (the wait was
// the time left until it), by nothing otherwise (the hub's own
// CommandTimeout and ReplyMargin).
func waitOver(ctx context.Context, action CommandAction) error {
	var cause error
	if ctx.Err() != nil {
		cause = ctx.Err()
	} else if _, ok := ctx.Deadline(); ok {
		cause = context.DeadlineExceeded
	}
	return &TimeoutError{Action: action, cause: cause}
}

// validate refuses, before anything goes on the wire, the commands the
// extension would misread: it resolves a relative URL against its own
// chrome-extension:// page and reports success, and an empty selector
// for click or type has no element to act on.
func (h *Hub) validate(cmd *BrowserCommand) error {
	invalid := func(msg string) error {
		return &CommandError{Action: cmd.Action, Message: msg, Invalid: true}
	}
	switch cmd.Action {
	case ActionNavigate:
		schemes := h.opts.NavigateSchemes
		allowed := strings.Join(schemes, ", ")
		if cmd.URL == "" {
			return invalid("empty URL (allowed schemes: " + allowed + ")")
		}
		u, err := url.Parse(cmd.URL)
		if err != nil || u.Scheme == "" {
			return invalid("URL is not absolute: it needs a scheme (allowed: " + allowed + ")")
		}
		if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
			return invalid("URL scheme " + strconv.Quote(truncate(u.Scheme, 32)) + " is not allowed (allowed: " + allowed + ")")
		}
		if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			return invalid("URL has no host")
		}
	case ActionClick, ActionType:
		if strings.TrimSpace(cmd.Selector) == "" {
			return invalid("empty selector")
		}
	}
	return nil
}

func (h *Hub) dropCall(call *pendingCall) {
	h.mu.Lock()
	if h.calls[call.id] == call {
		delete(h.calls, call.id)
		call.conn.pending.Add(-1)
	}
	h.mu.Unlock()
}

// completeCall delivers a browser_result to the command waiting for it.
// Results for unknown, already answered or other connections' ids are
// ignored.
func (h *Hub) completeCall(c *extConn, f *resultFrame) {
	h.mu.Lock()
	call := h.calls[f.ID]
	if call == nil || call.conn != c {
		h.mu.Unlock()
		c.ignored("result for unknown id", typeResult, 0, nil)
		return
	}
	delete(h.calls, f.ID)
	c.pending.Add(-1)
	h.mu.Unlock()
	if f.decodeErr != nil {
		call.finish(callOutcome{err: fmt.Errorf("%w: %v", ErrInvalidResult, f.decodeErr)})
		return
	}
	call.finish(callOutcome{res: f})
}

// resultOf turns a browser_result into the caller's result.
func resultOf(action CommandAction, f *resultFrame) (*BrowserResult, error) {
	if f.Error != "" {
		return nil, &CommandError{Action: action, Message: f.Error}
	}
	res := &BrowserResult{
		URL: f.URL, Title: f.Title, Content: f.Content,
		Tabs: f.Tabs, Events: f.Events, Raw: f.raw,
		ImageMIMEType: f.ImageMIMEType,
	}
	if f.Image != "" {
		data, mime, err := decodeImage(f.Image)
		if err != nil {
			return nil, &actionError{action, err}
		}
		res.Image = data
		if res.ImageMIMEType == "" {
			res.ImageMIMEType = mime
		}
		if res.ImageMIMEType == "" {
			res.ImageMIMEType = defaultImageMIME
		}
	}
	return res, nil
}

// decodeImage decodes a screenshot's base64, tolerating a data: URL prefix
// (whose MIME type it returns) and missing padding.
func decodeImage(s string) ([]byte, string, error) {
	var mime string
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		header, payload, found := strings.Cut(rest, ",")
		if !found || !strings.HasSuffix(header, ";base64") {
			return nil, "", fmt.Errorf("%w: image data URL is not base64", ErrInvalidResult)
		}
		mime = strings.TrimSuffix(header, ";base64")
		s = payload
	}
	enc := base64.StdEncoding
	if len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		return nil, "", fmt.Errorf("%w: image is not valid base64", ErrInvalidResult)
	}
	if len(data) == 0 {
		return nil, "", fmt.Errorf("%w: empty image", ErrInvalidResult)
	}
	return data, mime, nil
}

// encodeCommand builds a browser_command frame, appending cmd.Params'
// members. The frame is the one json.Marshal writes of a commandFrame,
// byte for byte, without reflection.
func encodeCommand(id string, cmd BrowserCommand, timeoutMS int64) ([]byte, error) {
	b := make([]byte, 0, 96+len(id)+len(cmd.Action)+len(cmd.URL)+len(cmd.Selector)+len(cmd.Text))
	b = append(b, `{"type":"`+typeCommand+`","id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, string(cmd.Action))
	for _, f := range [...]struct{ key, value string }{{`,"url":`, cmd.URL}, {`,"selector":`, cmd.Selector}, {`,"text":`, cmd.Text}} {
		if f.value != "" {
			b = append(b, f.key...)
			b = appendJSONString(b, f.value)
		}
	}
	if cmd.PressEnter {
		b = append(b, `,"press_enter":true`...)
	}
	b = append(b, `,"timeout_ms":`...)
	b = strconv.AppendInt(b, timeoutMS, 10)
	b = append(b, '}')
	if len(cmd.Params) == 0 {
		return b, nil
	}
	taken := map[string]bool{"type": true, "id": true, "action": true, "timeout_ms": true,
		"url": cmd.URL != "", "selector": cmd.Selector != "", "text": cmd.Text != "", "press_enter": cmd.PressEnter}
	var extra bytes.Buffer
	err := strictjson.Fields(cmd.Params, func(key, value []byte) error {
		if taken[string(key)] {
			return fmt.Errorf("extbridge: command params repeat the frame's key %q", truncate(string(key), 64))
		}
		k, _ := json.Marshal(string(key))
		extra.WriteByte(',')
		extra.Write(k)
		extra.WriteByte(':')
		extra.Write(value)
		return nil
	})
	if err != nil {
		if errors.Is(err, strictjson.ErrNotObject) {
			return nil, errors.New("extbridge: command params are not a JSON object")
		}
		return nil, err
	}
	out := make([]byte, 0, len(b)+extra.Len())
	out = append(out, b[:len(b)-1]...)
	out = append(out, extra.Bytes()...)
	return append(out, '}'), nil
}

// appendJSONString appends s as encoding/json writes it: HTML characters
// escaped too, which the module's other hand-written encoders leave alone
// (so strings with one go through encoding/json, rarely on this path).
func appendJSONString(dst []byte, s string) []byte {
	if strings.ContainsAny(s, "<>&") {
		q, _ := json.Marshal(s) // a string always marshals
		return append(dst, q...)
	}
	return jsonstr.Append(dst, s, true)
}
