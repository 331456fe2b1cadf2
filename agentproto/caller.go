package agentproto

import "context"

// Caller sends one command of the agent protocol and decodes its result,
// as [Client.Call] does; *[Client] implements it, and
// [github.com/agentbridge/agentbridge/agentproto/bridge.ExtensionCaller]
// adapts a bridge's extension. The tool catalogue
// ([github.com/agentbridge/agentbridge/agentproto/tools.Call]) sends its
// commands through one.
type Caller interface {
	Call(ctx context.Context, typ string, payload any, result any) error
}

// EventCaller is a [Caller] whose connection also carries the extension's
// events, such as *[Client]: the tool catalogue follows a goal's steps
// through it for its progress reports. Subscribe may return nil when there is
// no connection.
type EventCaller interface {
	Caller
	Subscribe(opts *SubscribeOptions) *Subscription
}
