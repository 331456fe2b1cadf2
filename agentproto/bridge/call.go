package bridge

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// Extension is what a [Server] forwards agent requests to: the browser
// extension behind a native messaging link ([Host]), a stand-in in tests, or
// anything else that can answer them.
type Extension interface {
	// Online reports whether requests can be forwarded now. While it is
	// false the server answers requests with the "not connected" error,
	// and bridge.health reports the extension offline.
	Online() bool

	// Forward sends c on its way. It must not block for long (the server
	// calls it from the connection's reading goroutine) and must answer c
	// exactly once, now or later, with c.Reply or c.Fail. The server
	// enforces c's timeout itself: after it, c.Reply and c.Fail do
	// nothing, and c.Context is canceled.
	Forward(c *Call)
}

// EventSource is implemented by an [Extension] that emits events. NewServer
// installs its own publishing function with SetEventHandler, so that the
// events reach every client of that server.
type EventSource interface {
	SetEventHandler(publish func(event json.RawMessage))
}

// ExtensionFunc adapts a function to the [Extension] interface. The server
// runs it in a goroutine of its own per request (so it suits tests and
// light use, not the hot path of a busy bridge), with a context canceled
// when the request times out, its client goes away or the server closes;
// [Server.Close] waits for it to return. The payload stays valid until it
// returns, even after a timeout. It is always online.
type ExtensionFunc func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error)

// Online reports true.
func (f ExtensionFunc) Online() bool { return true }

// Forward runs f for c in a new goroutine.
func (f ExtensionFunc) Forward(c *Call) {
	c.goFunc(func(ctx context.Context) {
		result, err := f(ctx, c.Type, c.Payload)
		if err != nil {
			c.Fail(err)
			return
		}
		c.Reply(result)
	})
}

// Call is one agent request on its way to the extension.
//
// Type, Payload and Timeout must not be modified. Payload is valid until
// c is answered; an [Extension] that needs it longer must copy it.
type Call struct {
	// Type is the command type, such as "browser.click".
	Type string
	// Payload is the request's payload, byte for byte as the agent sent
	// it ({} when it sent none or not an object).
	Payload json.RawMessage
	// Timeout is how long the server waits for the answer.
	Timeout time.Duration

	typeLit []byte // Type as the agent wrote it: a JSON string literal
	id      []byte // the agent's id as sent, or a generated one
	done    atomic.Bool
	srv     *Server
	conn    *serverConn // nil for calls that are not from a socket client
	sink    chan<- callResult
	timer   *time.Timer // calls of the HTTP API only: a connection times its own calls out
	// deadline is when a call of a connection times out.
	deadline time.Time

	prev, next *Call // in conn.calls

	hostID uint64       // set by Host
	reqBuf *wire.Buffer // the request frame's buffer, released after the reply is written

	mu     sync.Mutex // guards timer, ctx and cancel
	ctx    context.Context
	cancel context.CancelFunc
}

type callResult struct {
	result []byte
	err    error
}

// Reply answers c with result, relayed to the agent byte for byte (nil
// means null). result must be valid JSON and must not be modified after
// the call. Only the first of Reply and Fail counts.
func (c *Call) Reply(result json.RawMessage) { c.complete(result, nil, false, nil) }

// Fail answers c with an error. The agent receives err.Error() as the
// reply's error string, so a *[agentproto.RemoteError] passes its message unchanged.
// Only the first of Reply and Fail counts.
func (c *Call) Fail(err error) {
	if err == nil {
		err = &agentproto.RemoteError{Message: "unknown error"}
	}
	c.complete(nil, err, false, nil)
}

// Context returns a context canceled once c is answered, times out, its
// client goes away or the server closes.
func (c *Call) Context() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		c.ctx, c.cancel = context.WithCancel(context.Background())
		if c.done.Load() {
			c.cancel()
		}
	}
	return c.ctx
}

// complete answers c once. fromServer marks a completion the extension
// did not make (a timeout, the client leaving, the server closing): the
// extension is told to forget the call. resultBuf, when not nil, holds
// result and is released once the reply no longer needs it.
func (c *Call) complete(result []byte, err error, fromServer bool, resultBuf *wire.Buffer) bool {
	if !c.done.CompareAndSwap(false, true) {
		resultBuf.Release()
		return false
	}
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	if fromServer {
		if f, ok := c.srv.extension().(forgetter); ok {
			f.forget(c)
		}
	}
	c.srv.finish(c, result, err, resultBuf)
	return true
}

// forgetter is implemented by [Host]: it drops the pending entry of a call
// the server completed itself.
type forgetter interface{ forget(c *Call) }

// startTimer arms the call's timeout.
func (c *Call) startTimer() {
	c.mu.Lock()
	c.timer = time.AfterFunc(c.Timeout, c.expire)
	c.mu.Unlock()
}

func (c *Call) expire() { c.complete(nil, agentproto.NewTimeoutError(c.Type), true, nil) }

// goFunc runs fn(ctx) in a goroutine the server waits for on Close. The
// request's frame is kept until fn returns, so that the payload fn reads
// stays valid after a timeout has answered c.
func (c *Call) goFunc(fn func(ctx context.Context)) {
	ctx := c.Context()
	if c.reqBuf != nil {
		c.reqBuf.Retain()
	}
	if !c.srv.fnWG.tryGo(func() {
		defer c.reqBuf.Release()
		fn(ctx)
	}) {
		c.reqBuf.Release()
		c.Fail(errShuttingDown)
	}
}

// trackedGroup is a WaitGroup that refuses new goroutines once closed, so
// that Close can wait for all of them without racing Add against Wait.
type trackedGroup struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *trackedGroup) tryGo(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(fn)
	return true
}

func (g *trackedGroup) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
