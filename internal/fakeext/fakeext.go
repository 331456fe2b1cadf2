// Package fakeext is a fake browser extension for tests: a real WebSocket
// client (github.com/coder/websocket) that speaks the extension side of the
// extension bridge protocol, sending an Origin header like the real
// extension does. It dials a hub, says hello, answers browser commands
// through a handler (Browser is a small scripted one) and hands every other
// frame to the test.
//
// Listener provides in-memory connections for tests under testing/synctest.
package fakeext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// DefaultOrigin is the Origin the fake extension sends unless told
// otherwise: a Chrome extension id (32 letters a-p).
const DefaultOrigin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"

// Options configures a fake extension.
type Options struct {
	URL   string // the hub's ws:// URL (…/ws)
	Token string // sent in the hello

	Origin   string // default DefaultOrigin
	NoOrigin bool   // send no Origin header
	Version  string // extension_version; default "1.9.2"

	// HTTPClient dials the hub; Listener.HTTPClient for in-memory hubs.
	// Default: a client without keep-alives.
	HTTPClient *http.Client

	// OnCommand answers browser commands in the reader goroutine: a nil
	// result means no answer. When OnCommand is nil, commands are delivered
	// as frames like the rest.
	OnCommand func(Command) *Result

	// OnFrame, when set, receives every frame not handled by OnCommand in
	// the reader goroutine instead of the Next queue.
	OnFrame func(Frame)

	// IgnorePings makes the client not answer the hub's pings.
	IgnorePings bool

	// OnPing, when set, is called for every WebSocket ping received.
	OnPing func()

	// Stalled makes the client stop reading after the hello ack, so that
	// the hub's writes back up.
	Stalled bool
}

// Frame is one frame the hub sent.
type Frame struct {
	Type string
	Raw  []byte
}

// Decode unmarshals the frame into v.
func (f Frame) Decode(v any) error { return json.Unmarshal(f.Raw, v) }

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
	Raw        []byte `json:"-"`
}

// Result is a browser_result. Reply fills Type and ID.
type Result struct {
	Type          string          `json:"type"`
	ID            string          `json:"id"`
	URL           string          `json:"url,omitempty"`
	Title         string          `json:"title,omitempty"`
	Content       string          `json:"content,omitempty"`
	Events        []any           `json:"events,omitempty"`
	Error         string          `json:"error,omitempty"`
	Image         string          `json:"image,omitempty"`
	ImageMIMEType string          `json:"image_mime_type,omitempty"`
	Tabs          []Tab           `json:"tabs,omitempty"`
	Extra         json.RawMessage `json:"extra,omitempty"`
}

// Tab is one entry of a tabs result.
type Tab struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"`
}

// Ext is a connected, authenticated fake extension.
type Ext struct {
	ws     *websocket.Conn
	opts   Options
	frames chan Frame
	done   chan struct{}
	err    error // why the reader ended; read after done
	wg     sync.WaitGroup
}

// DialRaw opens the WebSocket only (no hello), with the options' Origin and
// ping behaviour, for tests of the handshake itself.
func DialRaw(ctx context.Context, opts Options) (*websocket.Conn, *http.Response, error) {
	hdr := http.Header{}
	if !opts.NoOrigin {
		origin := opts.Origin
		if origin == "" {
			origin = DefaultOrigin
		}
		hdr.Set("Origin", origin)
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	dopts := &websocket.DialOptions{HTTPClient: client, HTTPHeader: hdr}
	dopts.OnPingReceived = func(context.Context, []byte) bool {
		if opts.OnPing != nil {
			opts.OnPing()
		}
		return !opts.IgnorePings
	}
	ws, resp, err := websocket.Dial(ctx, opts.URL, dopts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(128 << 20)
	return ws, resp, nil
}

// Dial connects to the hub, sends browser_hello with the options' token and
// waits for browser_hello_ack. Frames after the ack (the mode frame first)
// are available through Next.
func Dial(ctx context.Context, opts Options) (*Ext, error) {
	ws, _, err := DialRaw(ctx, opts)
	if err != nil {
		return nil, err
	}
	version := opts.Version
	if version == "" {
		version = "1.9.2"
	}
	hello, _ := json.Marshal(map[string]string{"type": "browser_hello", "token": opts.Token, "extension_version": version})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("fakeext: hello: %w", err)
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("fakeext: waiting for ack: %w", err)
	}
	var ack struct{ Type string }
	if json.Unmarshal(data, &ack) != nil || ack.Type != "browser_hello_ack" {
		ws.CloseNow()
		return nil, fmt.Errorf("fakeext: expected browser_hello_ack, got %.64q", data)
	}
	e := &Ext{ws: ws, opts: opts, frames: make(chan Frame, 4096), done: make(chan struct{})}
	if opts.Stalled {
		close(e.done)
		return e, nil
	}
	e.wg.Add(1)
	go e.readLoop()
	return e, nil
}

func (e *Ext) readLoop() {
	defer e.wg.Done()
	defer close(e.done)
	defer close(e.frames)
	ctx := context.Background()
	for {
		_, data, err := e.ws.Read(ctx)
		if err != nil {
			e.err = err
			return
		}
		head := frameType(data)
		if head.Type == "browser_command" && e.opts.OnCommand != nil {
			var cmd Command
			if json.Unmarshal(data, &cmd) == nil {
				cmd.Raw = data
				if res := e.opts.OnCommand(cmd); res != nil {
					_ = e.Reply(ctx, cmd.ID, res)
				}
				continue
			}
		}
		f := Frame{Type: head.Type, Raw: data}
		if e.opts.OnFrame != nil {
			e.opts.OnFrame(f)
			continue
		}
		e.frames <- f
	}
}

type frameHead struct {
	Type string `json:"type"`
}

// frameType reads a frame's type, quickly when the frame starts with it as
// the hub's frames do.
func frameType(data []byte) frameHead {
	const prefix = `{"type":"`
	if bytes.HasPrefix(data, []byte(prefix)) {
		rest := data[len(prefix):]
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return frameHead{Type: string(rest[:i])}
		}
	}
	var h frameHead
	_ = json.Unmarshal(data, &h)
	return h
}

// Next returns the next frame the hub sent, in order.
func (e *Ext) Next(ctx context.Context) (Frame, error) {
	select {
	case f, ok := <-e.frames:
		if !ok {
			return Frame{}, e.closedErr()
		}
		return f, nil
	case <-ctx.Done():
		return Frame{}, ctx.Err()
	}
}

// NextOfType returns the next frame of type typ, skipping frames of the
// other types.
func (e *Ext) NextOfType(ctx context.Context, typ string) (Frame, error) {
	for {
		f, err := e.Next(ctx)
		if err != nil || f.Type == typ {
			return f, err
		}
	}
}

// NextCommand returns the next browser command (when OnCommand is nil).
func (e *Ext) NextCommand(ctx context.Context) (Command, error) {
	f, err := e.NextOfType(ctx, "browser_command")
	if err != nil {
		return Command{}, err
	}
	var cmd Command
	err = f.Decode(&cmd)
	cmd.Raw = f.Raw
	return cmd, err
}

// ErrClosed is returned by Next after the connection ended.
var ErrClosed = errors.New("fakeext: connection closed")

func (e *Ext) closedErr() error {
	if e.err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, e.err)
	}
	return ErrClosed
}

// Send marshals v and sends it as one text frame.
func (e *Ext) Send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.ws.Write(ctx, websocket.MessageText, b)
}

// SendRaw sends data as one text frame, unchecked.
func (e *Ext) SendRaw(ctx context.Context, data []byte) error {
	return e.ws.Write(ctx, websocket.MessageText, data)
}

// SendBinary sends data as one binary frame.
func (e *Ext) SendBinary(ctx context.Context, data []byte) error {
	return e.ws.Write(ctx, websocket.MessageBinary, data)
}

// Reply sends the browser_result of command id.
func (e *Ext) Reply(ctx context.Context, id string, res *Result) error {
	r := *res
	r.Type, r.ID = "browser_result", id
	return e.Send(ctx, r)
}

// Done is closed when the connection has ended (or at once for a stalled
// client, which never reads).
func (e *Ext) Done() <-chan struct{} { return e.done }

// CloseStatus returns the close code the hub sent, after Done; -1 when the
// connection ended without one.
func (e *Ext) CloseStatus() websocket.StatusCode { return websocket.CloseStatus(e.err) }

// Conn returns the underlying WebSocket.
func (e *Ext) Conn() *websocket.Conn { return e.ws }

// Close closes the connection (without waiting for the hub's close frame)
// and waits for the reader goroutine. It is idempotent.
func (e *Ext) Close() error {
	err := e.ws.CloseNow()
	e.wg.Wait()
	return err
}
