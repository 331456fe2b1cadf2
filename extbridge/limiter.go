package extbridge

import (
	"log/slog"
	"time"

	"github.com/agentbridge/agentbridge/internal/connguard"
)

// unauthConns guards the server of Serve and ListenAndServe with the SDK's
// shared mechanism (internal/connguard, as agentproto/httpapi.NewServer): at
// most max connections that have not authenticated as the extension (HTTP
// requests and keep-alive connections, artifact downloads, WebSockets
// before their hello) stay open, whatever their state. One more evicts the
// oldest idle one, else the oldest by accept order, so that connections
// held by other local processes can never lock the extension out: its
// reconnect is always the newest connection, and it authenticates within
// milliseconds. Every HTTP write has a WriteTimeout deadline.
type unauthConns struct{ *connguard.Guard }

// trackedConn is a connection hijacked from the hub's own server.
type trackedConn = connguard.Conn

func newUnauthConns(max int, writeTimeout time.Duration, log *slog.Logger) *unauthConns {
	return &unauthConns{connguard.New(connguard.Options{MaxUnauth: max, WriteTimeout: writeTimeout, Logger: log, Name: "extbridge"})}
}

// forget stops counting c: it authenticated as the extension (which is
// then bounded by being the one current connection).
func (s *unauthConns) forget(c *trackedConn) { s.AuthenticateConn(c) }

// len returns the number of connections counted.
func (s *unauthConns) len() int { return s.Unauthenticated() }
