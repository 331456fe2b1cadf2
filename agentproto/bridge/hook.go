package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/serverhook"
)

func init() {
	serverhook.Of = func(srv any) serverhook.Server { return hooked{srv.(*Server)} }
}

// hooked is a Server's side of package serverhook, for package httpapi.
type hooked struct{ s *Server }

func (h hooked) Call(ctx context.Context, typ string, payload []byte, timeout time.Duration) ([]byte, error) {
	return h.s.call(ctx, typ, payload, timeout)
}

func (h hooked) Caller() agentproto.Caller { return serverCaller{h.s} }

func (h hooked) Subscribe(taskID string, maxEvents int) serverhook.Subscription {
	sub := h.s.subscribe(taskID, maxEvents)
	if sub == nil {
		return nil
	}
	return hookedSub{sub}
}

func (h hooked) AppendHealth(dst []byte) []byte   { return h.s.appendHealth(dst) }
func (h hooked) ExtensionOnline() bool            { return h.s.extensionOnline() }
func (h hooked) Auth() (hasToken, allowAnon bool) { return h.s.hasToken, h.s.allowAnon }
func (h hooked) TokenMatches(token []byte) bool   { return h.s.tokenMatches(token) }
func (h hooked) Logger() *slog.Logger             { return h.s.log }

type hookedSub struct{ sub *subscriber }

func (h hookedSub) Ready() <-chan struct{}        { return h.sub.ready }
func (h hookedSub) Done() <-chan struct{}         { return h.sub.done }
func (h hookedSub) Take() []json.RawMessage       { return h.sub.take() }
func (h hookedSub) Written(event json.RawMessage) { h.sub.written(event) }
func (h hookedSub) Close()                        { h.sub.close() }
