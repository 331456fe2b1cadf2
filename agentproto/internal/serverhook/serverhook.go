// Package serverhook gives package httpapi the in-process entry points of
// a bridge server (its calls, event subscriptions, health and token check)
// without making them part of package bridge's API, as gRPC's internal
// package does for its server. Package bridge sets Of when it is
// initialised, before package httpapi, which imports it.
package serverhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
)

// Of returns the entry points of srv, a *bridge.Server.
var Of func(srv any) Server

// Server is what the HTTP API uses of a bridge server.
type Server interface {
	// Call forwards one request that does not come from a socket client
	// and waits for its answer, with the server's in-flight accounting,
	// timeout (timeout, or the default when zero) and closing.
	Call(ctx context.Context, typ string, payload []byte, timeout time.Duration) ([]byte, error)
	// Caller sends commands as Call does, with the coding of
	// agentproto.Client.Call.
	Caller() agentproto.Caller
	// Subscribe subscribes to taskID's events with room for maxEvents of
	// them, counted in the server's queued-bytes budgets; nil when the
	// server is closing.
	Subscribe(taskID string, maxEvents int) Subscription
	// AppendHealth appends bridge.health's result.
	AppendHealth(dst []byte) []byte
	// ExtensionOnline reports whether the extension is connected.
	ExtensionOnline() bool
	// Auth reports whether a token is configured and whether requests
	// without one are allowed when it is not.
	Auth() (hasToken, allowUnauthenticated bool)
	// TokenMatches compares token with the server's in constant time.
	TokenMatches(token []byte) bool
	// Logger is the server's logger.
	Logger() *slog.Logger
}

// Subscription is an in-process subscription to one task's events.
type Subscription interface {
	// Ready has a value when events are waiting.
	Ready() <-chan struct{}
	// Done is closed when the subscription ends (overflow, server closing).
	Done() <-chan struct{}
	// Take returns the events waiting; Written releases each once written.
	Take() []json.RawMessage
	Written(event json.RawMessage)
	// Close ends the subscription.
	Close()
}
