// Package codec lends package bridge the client's payload and result
// coding, so that a command sent in process (bridge.ExtensionCaller, the
// HTTP API's tool calls) is encoded, decoded and timed out exactly as
// agentproto.Client.Call does it. Package agentproto sets the functions
// when it is initialised, before any package that imports it.
package codec

import "context"

var (
	// EncodePayload checks or encodes a Call's payload.
	EncodePayload func(payload any) ([]byte, error)
	// DecodeResult decodes a raw result of a request of type typ into
	// result as Call does (an error matches agentproto.ErrInvalidResult).
	DecodeResult func(typ string, res []byte, result any) error
	// ContextError is the error of a call whose ctx ended (ErrTimeout for
	// a deadline), else fallback.
	ContextError func(ctx context.Context, fallback error) error
)
