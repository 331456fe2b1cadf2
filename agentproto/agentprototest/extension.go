package agentprototest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/internal/nmrelay"

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
	// Payload is the payload as relayed, byte for byte. With
	// Options.Serial it is valid only until the [Handler] returns.
	Payload json.RawMessage

	idLit []byte // ID as a JSON string literal, as the host wrote it
	ext   *Extension
	once  sync.Once
}

// Ext returns the [Extension] the request arrived at, to emit events
// around the answer as the real extension does.
func (r *Request) Ext() *Extension { return r.ext }

// Reply answers with result, encoded with encoding/json (a
// json.RawMessage is sent as is). Only the first answer is sent; later
// ones return [ErrAnswered].
func (r *Request) Reply(result any) error {
	raw, err := marshalRaw(result)
	if err != nil {
		return err
	}
	return r.answer(resultMid, raw)
}

// Fail answers with an error string, as the extension does for a thrown
// exception.
func (r *Request) Fail(msg string) error {
	return r.answer(errorMid, wire.AppendString(nil, msg))
}

// ReplyEmpty answers with neither result nor error (a null result).
func (r *Request) ReplyEmpty() error {
	return r.answer(nil, nil)
}

// ErrAnswered is returned for a second answer to one request.
var ErrAnswered = errors.New("agentprototest: request already answered")

var (
	responseHead = []byte(`{"kind":"bridge:response","id":`)
	resultMid    = []byte(`,"result":`)
	errorMid     = []byte(`,"error":`)
)

// answer writes {"kind":"bridge:response","id":…}, with mid and value
// before the closing brace, unless r was answered already.
func (r *Request) answer(mid, value []byte) error {
	sent := false
	var err error
	r.once.Do(func() {
		sent = true
		var b answerBatch
		b.add(r.idLit, mid, value)
		err = b.flush(r.ext.conn)
	})
	if !sent {
		return ErrAnswered
	}
	return err
}

// answerBatch collects encoded responses to write together with one
// system call. Values of answers up to inlineAnswer bytes are copied into
// its own buffer; larger ones are written from where they are.
type answerBatch struct {
	own   []byte
	parts [][]byte
	start int // the start of the part of own not yet in parts
}

const inlineAnswer = 4 << 10

func (b *answerBatch) add(idLit, mid, value []byte) {
	n := len(responseHead) + len(idLit) + len(mid) + len(value) + 1
	b.own = binary.LittleEndian.AppendUint32(b.own, uint32(n))
	b.own = append(append(append(b.own, responseHead...), idLit...), mid...)
	if len(value) > inlineAnswer {
		b.parts = append(b.parts, b.own[b.start:], value)
		b.start = len(b.own)
	} else {
		b.own = append(b.own, value...)
	}
	b.own = append(b.own, '}')
}

func (b *answerBatch) empty() bool { return len(b.own) == 0 }

// flush writes the batch and empties it.
func (b *answerBatch) flush(conn *nativemsg.Conn) error {
	if b.start < len(b.own) {
		b.parts = append(b.parts, b.own[b.start:])
	}
	err := nmrelay.Writer(conn.Writer).WriteFrames(b.parts)
	clear(b.parts)
	b.own, b.parts, b.start = b.own[:0], b.parts[:0], 0
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

// Handler answers requests for an [Extension].
type Handler interface {
	// ServeRequest returns the result, or an error whose message becomes
	// the error string. Returning [ErrNoReply] sends nothing (a request the
	// extension never answers); a handler may also answer r itself (for
	// instance with ReplyEmpty) and return ErrNoReply.
	ServeRequest(ctx context.Context, r *Request) (any, error)
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, r *Request) (any, error)

// ServeRequest calls f.
func (f HandlerFunc) ServeRequest(ctx context.Context, r *Request) (any, error) { return f(ctx, r) }

// ErrNoReply, returned by a [Handler], leaves the request unanswered.
var ErrNoReply = errors.New("agentprototest: no reply")

// Mux routes requests to handlers by type, and answers unknown types as
// the extension does: "Unknown bridge request: <type>".
type Mux map[string]Handler

// ServeRequest dispatches r.
func (m Mux) ServeRequest(ctx context.Context, r *Request) (any, error) {
	if h, ok := m[r.Type]; ok {
		return h.ServeRequest(ctx, r)
	}
	return nil, agentproto.NewUnknownRequestError(r.Type)
}

// Echo answers every request with its own payload.
var Echo = HandlerFunc(func(_ context.Context, r *Request) (any, error) {
	return r.Payload, nil
})

// Options configures an [Extension]. Nil means the defaults.
type Options struct {
	// Handler answers requests. Nil means none: requests are delivered
	// on Requests() for the test to answer, in any order.
	Handler Handler
	// Serial runs [Handler] in the reading goroutine, one request at a
	// time, instead of a goroutine per request as the real extension
	// (which answers out of order). It is the lowest-overhead mode, for
	// benchmarks: a request's frame is read into pooled memory that is
	// reused once the Handler has returned and its answer been written,
	// and the answers to requests that arrived together are written
	// together.
	Serial bool
	// NoHello skips the bridge:hello frame the extension sends first;
	// the host then keeps it offline until Hello is called.
	NoHello bool
}

// Extension is a scriptable stand-in for the browser extension, at the
// browser end of a native messaging connection (see [nativemsg.Pipe]). It
// reads bridge:request frames, answers them through its [Handler] or lets
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

	received atomic.Int64

	mu  sync.Mutex
	err error
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

// Requests returns the requests to answer, when the [Extension] has no
// [Handler]. The channel is closed when the connection ends.
func (e *Extension) Requests() <-chan *Request { return e.requests }

// Received reports how many requests have arrived.
func (e *Extension) Received() int { return int(e.received.Load()) }

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

// Done is closed when the [Extension]'s reading goroutine has ended (the
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
// waits for the [Extension]'s goroutines. It is idempotent.
func (e *Extension) Close() error {
	e.cancel()
	e.conn.Close()
	e.wg.Wait()
	return nil
}

func (e *Extension) readLoop() {
	defer close(e.done)
	defer close(e.requests)
	var batch answerBatch
	var held []*wire.Buffer // frames the batch's answers borrow from
	flush := func() error {
		var err error
		if !batch.empty() {
			err = batch.flush(e.conn)
		}
		for _, b := range held {
			b.Release()
		}
		clear(held)
		held = held[:0]
		return err
	}
	for {
		if len(held) > 0 && !e.nextFrameArrived() {
			// Nothing more to answer together: write the answers before
			// waiting for the next request.
			if flush() != nil {
				return
			}
		}
		var frame []byte
		var buf *wire.Buffer
		var err error
		if e.opts.Serial && e.opts.Handler != nil {
			frame, buf, err = wire.ReadFrame(e.conn.Reader)
		} else {
			frame, err = e.conn.ReadMessage(nil)
		}
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
			buf.Release()
			continue // the real extension ignores what it cannot read
		}
		r.ext = e
		e.received.Add(1)
		switch {
		case e.opts.Handler == nil:
			select {
			case e.requests <- r:
			case <-e.ctx.Done():
				return
			}
		case e.opts.Serial:
			if mid, value, ok := e.handle(r); ok && r.claim() {
				batch.add(r.idLit, mid, value)
			}
			held = append(held, buf)
		default:
			e.wg.Go(func() {
				if mid, value, ok := e.handle(r); ok {
					r.answer(mid, value)
				}
			})
		}
	}
}

// nextFrameArrived reports whether the whole next frame is already
// buffered, so that reading it will not wait.
func (e *Extension) nextFrameArrived() bool {
	r := nmrelay.Reader(e.conn.Reader)
	if r.Buffered() < 4 {
		return false
	}
	n, err := r.NextSize()
	return err == nil && r.Buffered() >= n
}

// handle runs the [Handler] for r and returns the answer to send, if any.
func (e *Extension) handle(r *Request) (mid, value []byte, ok bool) {
	result, err := e.opts.Handler.ServeRequest(e.ctx, r)
	switch {
	case errors.Is(err, ErrNoReply):
		return nil, nil, false
	case err != nil:
		return errorMid, wire.AppendString(nil, err.Error()), true
	}
	raw, err := marshalRaw(result)
	if err != nil {
		return errorMid, wire.AppendString(nil, err.Error()), true
	}
	return resultMid, raw, true
}

// claim marks r answered and reports whether it was not already.
func (r *Request) claim() bool {
	claimed := false
	r.once.Do(func() { claimed = true })
	return claimed
}

// requestHead is how every bridge:request the Host writes begins; the
// rest follows in a fixed order, which parseRequest reads without a
// general JSON parse: the host has validated the payload it relays, and
// the real extension's parse runs in Chrome's process, not the host's.
var (
	requestHead = []byte(`{"kind":"bridge:request","id":"`)
	requestType = []byte(`","type":"`)
	requestPay  = []byte(`","payload":`)
	closeBrace  = []byte(`}`)
)

func parseRequest(frame []byte) (*Request, error) {
	if r, ok := parseHostRequest(frame); ok {
		return r, nil
	}
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
	if string(kind) != string(agentproto.KindRequest) {
		return nil, fmt.Errorf("agentprototest: frame of kind %q", kind)
	}
	r.idLit = wire.AppendString(nil, r.ID)
	return r, nil
}

// parseHostRequest reads a request in the exact form the Host writes:
// {"kind":"bridge:request","id":"<digits>","type":"<no escapes>","payload":P}.
func parseHostRequest(frame []byte) (*Request, bool) {
	rest, ok := bytes.CutPrefix(frame, requestHead)
	if !ok {
		return nil, false
	}
	idEnd := 0
	for idEnd < len(rest) && rest[idEnd] >= '0' && rest[idEnd] <= '9' {
		idEnd++
	}
	id := rest[:idEnd]
	if rest, ok = bytes.CutPrefix(rest[idEnd:], requestType); !ok || idEnd == 0 {
		return nil, false
	}
	typeEnd := bytes.IndexByte(rest, '"')
	if typeEnd < 0 || bytes.IndexByte(rest[:typeEnd], '\\') >= 0 {
		return nil, false
	}
	typ := rest[:typeEnd]
	payload, ok := bytes.CutPrefix(rest[typeEnd:], requestPay)
	payload, closed := bytes.CutSuffix(payload, closeBrace)
	if !ok || !closed || len(payload) < 2 || payload[0] != '{' || payload[len(payload)-1] != '}' {
		return nil, false
	}
	return &Request{
		ID:      string(id),
		Type:    typeName(typ),
		Payload: payload,
		idLit:   frame[len(requestHead)-1 : len(requestHead)+idEnd+1],
	}, true
}

// typeName returns the command type t names, without allocating for the
// protocol's own types.
func typeName(t []byte) string {
	if name, ok := typeNames[string(t)]; ok {
		return name
	}
	return string(t)
}

var typeNames = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{
		agentproto.TypeHealth, agentproto.TypeSnapshot, agentproto.TypeScreenshot, agentproto.TypeNavigate,
		agentproto.TypeClick, agentproto.TypeText, agentproto.TypePress, agentproto.TypeScroll,
		agentproto.TypeExtract, agentproto.TypeTasksList, agentproto.TypeTasksGet, agentproto.TypeTasksStart,
		agentproto.TypeTasksStop, agentproto.TypeTasksPause, agentproto.TypeTasksResume,
		agentproto.TypeTasksConfirm, agentproto.TypeTasksWait,
	} {
		m[t] = t
	}
	return m
}()
