package agentprototest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Request is a bridge:request as the extension receives it.
type Request struct {
	// ID is the host's id for the request.
	ID string
	// Type is the command type.
	Type string
	// Payload is the payload as relayed, byte for byte.
	Payload json.RawMessage

	ext  *Extension
	once sync.Once
}

// Ext returns the Extension the request arrived at, to emit events
// around the answer as the real extension does.
func (r *Request) Ext() *Extension { return r.ext }

// Reply answers with result, encoded with encoding/json (a
// json.RawMessage is sent as is). Only the first answer is sent; later
// ones return ErrAnswered.
func (r *Request) Reply(result any) error {
	raw, err := marshalRaw(result)
	if err != nil {
		return err
	}
	return r.answer(func(dst []byte) []byte {
		dst = append(dst, `,"result":`...)
		return append(dst, raw...)
	})
}

// Fail answers with an error string, as the extension does for a thrown
// exception.
func (r *Request) Fail(msg string) error {
	return r.answer(func(dst []byte) []byte {
		return wire.AppendString(append(dst, `,"error":`...), msg)
	})
}

// ReplyEmpty answers with neither result nor error (a null result).
func (r *Request) ReplyEmpty() error {
	return r.answer(func(dst []byte) []byte { return dst })
}

// ErrAnswered is returned for a second answer to one request.
var ErrAnswered = errors.New("agentprototest: request already answered")

func (r *Request) answer(body func([]byte) []byte) error {
	sent := false
	var err error
	r.once.Do(func() {
		sent = true
		msg := append([]byte(`{"kind":"bridge:response","id":`), wire.AppendString(nil, r.ID)...)
		msg = append(body(msg), '}')
		err = r.ext.conn.WriteMessage(msg)
	})
	if !sent {
		return ErrAnswered
	}
	return err
}

func marshalRaw(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case json.RawMessage:
		if v == nil {
			return json.RawMessage("null"), nil
		}
		return v, nil
	case []byte:
		return v, nil
	}
	return json.Marshal(v)
}

// Handler answers requests for an Extension.
type Handler interface {
	// ServeRequest returns the result, or an error whose message becomes
	// the error string. Returning ErrNoReply sends nothing (a request the
	// extension never answers); a handler may also answer r itself (for
	// instance with ReplyEmpty) and return ErrNoReply.
	ServeRequest(ctx context.Context, r *Request) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, r *Request) (any, error)

// ServeRequest calls f.
func (f HandlerFunc) ServeRequest(ctx context.Context, r *Request) (any, error) { return f(ctx, r) }

// ErrNoReply, returned by a Handler, leaves the request unanswered.
var ErrNoReply = errors.New("agentprototest: no reply")

// Mux routes requests to handlers by type, and answers unknown types as
// the extension does: "Unknown bridge request: <type>".
type Mux map[string]Handler

// ServeRequest dispatches r.
func (m Mux) ServeRequest(ctx context.Context, r *Request) (any, error) {
	if h, ok := m[r.Type]; ok {
		return h.ServeRequest(ctx, r)
	}
	return nil, agentproto.UnknownRequestError(r.Type)
}

// Echo answers every request with its own payload.
var Echo = HandlerFunc(func(_ context.Context, r *Request) (any, error) {
	return r.Payload, nil
})

// Options configures an Extension. Nil means the defaults.
type Options struct {
	// Handler answers requests. Nil means none: requests are delivered
	// on Requests() for the test to answer, in any order.
	Handler Handler
	// Serial runs Handler in the reading goroutine, one request at a
	// time, instead of a goroutine per request as the real extension
	// (which answers out of order). It is the lowest-overhead mode, for
	// benchmarks.
	Serial bool
	// NoHello skips the bridge:hello frame the extension sends first;
	// the host then keeps it offline until Hello is called.
	NoHello bool
}

// Extension is a scriptable stand-in for the browser extension, at the
// browser end of a native messaging connection (see nativemsg.Pipe). It
// reads bridge:request frames, answers them through its Handler or lets
// the test answer them, and can send events, garbage, or vanish.
//
// Its methods are safe for concurrent use.
type Extension struct {
	conn     *nativemsg.Conn
	opts     Options
	requests chan *Request
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	done     chan struct{}

	mu       sync.Mutex
	received int
	err      error
}

// NewExtension starts a stand-in extension on conn, the browser end of a
// native messaging connection. Unless opts.NoHello is set it first sends
// bridge:hello (in its own goroutine, since conn may be an unbuffered
// pipe). Close stops it.
func NewExtension(conn *nativemsg.Conn, opts *Options) *Extension {
	e := &Extension{conn: conn, requests: make(chan *Request, 1024), done: make(chan struct{})}
	if opts != nil {
		e.opts = *opts
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.wg.Go(func() {
		if !e.opts.NoHello {
			if err := e.Hello(); err != nil {
				return
			}
		}
		e.readLoop()
	})
	return e
}

// Hello sends {"kind":"bridge:hello"}, which marks the extension online.
func (e *Extension) Hello() error {
	return e.conn.WriteMessage([]byte(`{"kind":"bridge:hello"}`))
}

// Requests returns the requests to answer, when the Extension has no
// Handler. The channel is closed when the connection ends.
func (e *Extension) Requests() <-chan *Request { return e.requests }

// Received reports how many requests have arrived.
func (e *Extension) Received() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received
}

// Emit sends an event: {"kind":"bridge:event","event":event}. event is
// encoded with encoding/json (a json.RawMessage is sent as is).
func (e *Extension) Emit(event any) error {
	raw, err := marshalRaw(event)
	if err != nil {
		return err
	}
	msg := append([]byte(`{"kind":"bridge:event","event":`), raw...)
	return e.conn.WriteMessage(append(msg, '}'))
}

// Send writes one raw frame body as is (which need not be valid JSON),
// for tests of malformed input.
func (e *Extension) Send(frame []byte) error { return e.conn.WriteMessage(frame) }

// Vanish drops the connection at once, as a crashed extension or a closed
// browser would: the host sees the end of its input.
func (e *Extension) Vanish() { e.conn.Close() }

// Done is closed when the Extension's reading goroutine has ended (the
// connection ended).
func (e *Extension) Done() <-chan struct{} { return e.done }

// Err returns the error that ended the reading goroutine (nil for a clean
// end of stream).
func (e *Extension) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Close closes the connection, cancels running handlers' contexts and
// waits for the Extension's goroutines. It is idempotent.
func (e *Extension) Close() error {
	e.cancel()
	e.conn.Close()
	e.wg.Wait()
	return nil
}

func (e *Extension) readLoop() {
	defer close(e.done)
	defer close(e.requests)
	for {
		frame, err := e.conn.ReadMessage(nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				e.mu.Lock()
				e.err = err
				e.mu.Unlock()
			}
			return
		}
		r, err := parseRequest(frame)
		if err != nil {
			continue // the real extension ignores what it cannot read
		}
		r.ext = e
		e.mu.Lock()
		e.received++
		e.mu.Unlock()
		switch {
		case e.opts.Handler == nil:
			select {
			case e.requests <- r:
			case <-e.ctx.Done():
				return
			}
		case e.opts.Serial:
			e.serve(r)
		default:
			e.wg.Go(func() { e.serve(r) })
		}
	}
}

func (e *Extension) serve(r *Request) {
	result, err := e.opts.Handler.ServeRequest(e.ctx, r)
	switch {
	case errors.Is(err, ErrNoReply):
	case err != nil:
		r.Fail(err.Error())
	default:
		r.Reply(result)
	}
}

func parseRequest(frame []byte) (*Request, error) {
	var it wire.Members
	it.Reset(frame)
	r := &Request{}
	var kind []byte
	for it.Next() {
		m := it.Member()
		switch string(wire.UnescapeKey(m)) {
		case "kind":
			kind, _ = wire.Unquote(m.Value)
		case "id":
			id, _ := wire.Unquote(m.Value)
			r.ID = string(id)
		case "type":
			t, _ := wire.Unquote(m.Value)
			r.Type = string(t)
		case "payload":
			r.Payload = m.Value
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if string(kind) != agentproto.KindRequest {
		return nil, fmt.Errorf("agentprototest: frame of kind %q", kind)
	}
	return r, nil
}
