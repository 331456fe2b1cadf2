package bridge

import (
	"errors"
	"strconv"

	"github.com/agentbridge/agentbridge/agentproto"
)

// ErrServerClosed is returned by [Server.Serve] after Shutdown or Close.
var ErrServerClosed = errors.New("bridge: server closed")

func tooManyInFlight(limit int) *agentproto.RemoteError {
	return &agentproto.RemoteError{Message: agentproto.MsgTooManyInFlightPrefix + strconv.Itoa(limit)}
}

func requestTooLarge(size, limit int) *agentproto.RemoteError {
	return &agentproto.RemoteError{Message: agentproto.MsgRequestTooLargePrefix + "the frame would be " + strconv.Itoa(size) +
		" bytes and Chrome accepts at most " + strconv.Itoa(limit)}
}

var (
	errStreamClosed     = &agentproto.RemoteError{Message: agentproto.MsgStreamClosed}
	errExtensionOffline = &agentproto.RemoteError{Message: agentproto.MsgExtensionOffline}
	errUnauthorized     = &agentproto.RemoteError{Message: agentproto.MsgUnauthorized}
	errTokenNotSet      = &agentproto.RemoteError{Message: agentproto.MsgTokenNotConfigured}
	errLinkCongested    = &agentproto.RemoteError{Message: agentproto.MsgLinkCongested}
	errShuttingDown     = &agentproto.RemoteError{Message: agentproto.MsgShuttingDown}
)

// requestFrameTooLarge is the answer to a request frame over the limit:
// the message of the client's own refusal, so that both read alike.
func requestFrameTooLarge(size, limit uint64) string {
	return (&agentproto.RequestSizeError{Size: int(size), Limit: int(limit)}).Error()
}
