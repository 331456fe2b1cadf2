package agentproto

import (
	"net"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// DefaultMaxRequestSize is the largest request frame a bridge server reads
// by default, and so the largest a [Client] sends by default
// ([ClientOptions].MaxRequestSize). A larger frame is answered with an
// error and ends the connection (the stream cannot be resynchronised).
// Requests between Chrome's 1 MiB limit and this size are answered with a
// clear error by the native host and the connection stays up.
const DefaultMaxRequestSize = 4 << 20

// The client's share of the pieces it has in common with package bridge.
const (
	readBufferSize = wire.ReadBufferSize
	maxReplySize   = wire.MaxReplySize
)

var nullResult = wire.Null

func rawConn(nc net.Conn) syscall.RawConn { return wire.RawConn(nc) }

func orDefault[T int | int64 | time.Duration](v, def T) T { return wire.OrDefault(v, def) }

func defaultSocketPath() string { return sockpath.Default() }
