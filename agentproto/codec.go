package agentproto

import (
	"github.com/agentbridge/agentbridge/agentproto/internal/codec"
)

func init() {
	codec.EncodePayload = encodePayload
	codec.DecodeResult = func(res []byte, result any) error { return decodeResult(res, nil, result) }
	codec.ContextError = ctxError
}
