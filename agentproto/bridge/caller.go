package bridge

import (
	"context"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/codec"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// ExtensionCaller returns an [agentproto.Caller] that sends commands
// straight to ext, without a socket: what the HTTP API uses, and what a
// program that embeds a [Host] can use (with package tools, for instance).
// Commands time out when ctx ends, or after [agentproto.DefaultTimeout]
// when ctx has no deadline; errors are the extension's (a
// *[agentproto.RemoteError] for the protocol's errors, so errors.Is works;
// a nil ext is never online). The caller never takes over ext's events.
func ExtensionCaller(ext Extension) agentproto.Caller {
	return serverCaller{NewServer(&ServerOptions{Extension: eventless{ext}, AllowUnauthenticated: true})}
}

// eventless hides an [Extension]'s [EventSource], so that a [Server] made only to
// forward calls does not take its events from the real server; it keeps
// [Host]'s forgetting of timed-out calls.
type eventless struct{ ext Extension }

func (e eventless) Online() bool    { return e.ext != nil && e.ext.Online() }
func (e eventless) Forward(c *Call) { e.ext.Forward(c) }
func (e eventless) forget(c *Call) {
	if f, ok := e.ext.(forgetter); ok {
		f.forget(c)
	}
}

// serverCaller forwards commands through a server's extension, as the
// HTTP API does: no token, the server's in-flight accounting and closing.
type serverCaller struct{ srv *Server }

func (c serverCaller) Call(ctx context.Context, typ string, payload any, result any) error {
	raw, err := codec.EncodePayload(payload)
	if err != nil {
		return err
	}
	if len(raw) == 0 || raw[wire.SkipSpace(raw)] != '{' {
		raw = wire.EmptyObject // as the socket server does
	}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
		if timeout < time.Millisecond {
			return codec.ContextError(ctx, context.DeadlineExceeded)
		}
	}
	res, err := c.srv.call(ctx, typ, raw, timeout)
	if err != nil {
		if ctx.Err() != nil {
			return codec.ContextError(ctx, err)
		}
		return err
	}
	if res == nil {
		res = wire.Null
	}
	return codec.DecodeResult(typ, res, result)
}

// call forwards one request that does not come from a socket client (the
// HTTP API) and waits for its answer.
func (s *Server) call(ctx context.Context, typ string, payload []byte, timeout time.Duration) ([]byte, error) {
	r := wire.Request{Type: wire.AppendString(nil, typ), TypeStr: typ, Payload: payload, Timeout: timeout}
	call := s.newCall(&r)
	sink := make(chan callResult, 1)
	call.sink = sink
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, errShuttingDown
	}
	s.calls[call] = struct{}{} // for Close to abandon
	s.inFlight.Add(1)
	s.mu.Unlock()
	call.startTimer()
	s.forward(call)
	select {
	case res := <-sink:
		return res.result, res.err
	case <-ctx.Done():
		call.complete(nil, ctx.Err(), true, nil)
		res := <-sink
		return res.result, res.err
	}
}
