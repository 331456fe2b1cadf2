package agentproto

import (
	"errors"
	"strconv"
	"strings"
)

// The exact error strings of the protocol. Agents match on them, so they
// are part of the contract: a [RemoteError] carrying one of them matches the
// corresponding sentinel with errors.Is.
const (
	// MsgTokenNotConfigured refuses every request of a bridge started
	// without a token unless unauthenticated use was allowed.
	MsgTokenNotConfigured = "WEBOPERATOR_API_TOKEN is required unless WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1"
	// MsgUnauthorized answers a request with a missing or wrong token.
	MsgUnauthorized = "Missing or invalid WebOperator API token"
	// MsgExtensionOffline answers a request while no extension is connected.
	MsgExtensionOffline = "WebOperator extension is not connected to the bridge"
	// MsgTimeoutPrefix starts the answer to a request that timed out; the
	// request's type follows it.
	MsgTimeoutPrefix = "Bridge request timed out: "
	// MsgStreamClosed fails every pending request when the native
	// messaging link to the extension is lost.
	MsgStreamClosed = "Extension native messaging stream closed"
	// MsgUnknownRequestPrefix starts the extension's answer to a type it
	// does not know; the type follows it.
	MsgUnknownRequestPrefix = "Unknown bridge request: "

	// The strings below are this project's: the reference host has no
	// such limits.

	// MsgTooManyInFlightPrefix starts the answer to a request beyond the
	// connection's limit of requests in flight; the limit follows.
	MsgTooManyInFlightPrefix = "Too many requests in flight on this connection; the limit is "
	// MsgRequestTooLargePrefix starts the answer to a request whose frame
	// to the extension would exceed Chrome's 1 MiB limit (Chrome would
	// close the link and lose every pending request).
	MsgRequestTooLargePrefix = "Request too large for the extension link: "
	// MsgLinkCongested answers a request while the link to the extension
	// has too many bytes waiting to be written.
	MsgLinkCongested = "Extension link congested: too many bytes waiting to be written"
	// MsgInvalidType answers a request whose type is missing or not a
	// non-empty string.
	MsgInvalidType = "Invalid request: type must be a non-empty string"
	// MsgShuttingDown answers a request that arrives while the server shuts down.
	MsgShuttingDown = "Bridge is shutting down"
)

// Sentinel errors. A *[RemoteError] matches the first five by its message;
// the client returns [ErrClosed] (wrapped with the cause) for calls on a
// closed or lost connection.
var (
	// ErrUnauthorized matches a refusal for a missing, wrong or
	// unconfigured token.
	ErrUnauthorized = errors.New("agentproto: unauthorized")
	// ErrExtensionOffline matches the error for a request made while no
	// extension is connected.
	ErrExtensionOffline = errors.New("agentproto: extension not connected")
	// ErrTimeout matches a request the bridge timed out, and a call whose
	// context deadline passed before its answer.
	ErrTimeout = errors.New("agentproto: request timed out")
	// ErrStreamClosed matches the failure of a request pending when the
	// link to the extension was lost.
	ErrStreamClosed = errors.New("agentproto: extension stream closed")
	// ErrUnknownRequest matches the extension's answer to an unknown type.
	ErrUnknownRequest = errors.New("agentproto: unknown request type")
	// ErrTooManyRequests matches a refusal for too many requests in flight.
	ErrTooManyRequests = errors.New("agentproto: too many requests in flight")
	// ErrRequestFrameTooLarge matches a request frame over a size limit:
	// the server's answer before it closes the connection, and the
	// *[RequestSizeError] of a [Client] that refused to send it.
	ErrRequestFrameTooLarge = errors.New("agentproto: request frame too large")
	// ErrRequestTooLarge matches a refusal of a request too large for the
	// extension link.
	ErrRequestTooLarge = errors.New("agentproto: request too large for the extension link")
	// ErrInvalidResult is matched by the error of a typed [Client] method
	// (and of [Client.Call]'s decoding) for a result that does not have
	// the shape the protocol gives it: not valid for the Go type, a wrong
	// "kind", a required member missing, or null where a value is needed.
	// The error says which member, never the result's bytes.
	ErrInvalidResult = errors.New("agentproto: invalid result")

	// ErrClosed is returned for calls on a closed [Client], and (wrapped with
	// the cause) for calls pending when the connection was lost.
	ErrClosed = errors.New("agentproto: connection closed")
)

// RemoteError is an error reply: the string the peer sent, unchanged.
// Use errors.Is with the sentinels above to classify it.
type RemoteError struct {
	Message string
}

func (e *RemoteError) Error() string { return e.Message }

// Is reports whether the message is one of the protocol's known errors.
func (e *RemoteError) Is(target error) bool {
	m := e.Message
	switch target {
	case ErrUnauthorized:
		return m == MsgUnauthorized || m == MsgTokenNotConfigured
	case ErrExtensionOffline:
		return m == MsgExtensionOffline
	case ErrTimeout:
		return strings.HasPrefix(m, MsgTimeoutPrefix)
	case ErrStreamClosed:
		return m == MsgStreamClosed
	case ErrUnknownRequest:
		return strings.HasPrefix(m, MsgUnknownRequestPrefix)
	case ErrTooManyRequests:
		return strings.HasPrefix(m, MsgTooManyInFlightPrefix)
	case ErrRequestTooLarge:
		return strings.HasPrefix(m, MsgRequestTooLargePrefix)
	case ErrRequestFrameTooLarge:
		return strings.HasPrefix(m, msgRequestFramePrefix) && strings.Contains(m, msgRequestFrameLimit)
	}
	return false
}

// NewTimeoutError returns the error a bridge answers a timed-out request
// of type typ with: "Bridge request timed out: <typ>". It matches
// [ErrTimeout].
func NewTimeoutError(typ string) *RemoteError {
	return &RemoteError{Message: MsgTimeoutPrefix + typ}
}

// NewUnknownRequestError returns the extension's answer to a request of a
// type it does not know: "Unknown bridge request: <typ>". It matches
// [ErrUnknownRequest].
func NewUnknownRequestError(typ string) *RemoteError {
	return &RemoteError{Message: MsgUnknownRequestPrefix + typ}
}

// The server's answer to a request frame over its limit: the prefix, the
// size, msgRequestFrameLimit, the limit, " bytes".
const (
	msgRequestFramePrefix = "Request frame of "
	msgRequestFrameLimit  = " bytes exceeds the limit of "
)

func requestFrameTooLarge(size, limit uint64) string {
	return msgRequestFramePrefix + strconv.FormatUint(size, 10) + msgRequestFrameLimit + strconv.FormatUint(limit, 10) + " bytes"
}

// RequestSizeError is returned by [Client.Call], before anything is
// written, for a request whose frame would exceed
// [ClientOptions.MaxRequestSize]. Its message is the one a [github.com/agentbridge/agentbridge/agentproto/bridge.Server]
// answers such a frame with, and it matches [ErrRequestFrameTooLarge].
type RequestSizeError struct {
	Size  int // the frame's size in bytes
	Limit int // the limit
}

func (e *RequestSizeError) Error() string {
	return requestFrameTooLarge(uint64(e.Size), uint64(e.Limit))
}

// Is reports whether target is [ErrRequestFrameTooLarge].
func (e *RequestSizeError) Is(target error) bool { return target == ErrRequestFrameTooLarge }
