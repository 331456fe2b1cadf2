package agentproto

import (
	"github.com/agentbridge/agentbridge/agentproto/internal/codec"
)

func init() {
	codec.EncodePayload = encodePayload
	codec.DecodeResult = func(typ string, res []byte, result any) error { return decodeResult(typ, res, nil, result) }
	codec.ContextError = ctxError
}
