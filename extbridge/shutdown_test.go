package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// turnEvent is the part of an AG-UI event the Shutdown tests compare.
type turnEvent struct {
	Type, Delta, RunID string
}

// eventsUntil reads the fake's chat events (either dialect) up to and
// including the first that last accepts.
func eventsUntil(t *testing.T, ext *extbridgetest.Extension, last func(turnEvent) bool) []turnEvent {
	t.Helper()
	var got []turnEvent
	for len(got) == 0 || !last(got[len(got)-1]) {
		f := next(t, ext)
		raw := f.Event()
		if raw == nil {
			continue // a frame other than a chat event
		}
		var ev turnEvent
		require.NoError(t, json.Unmarshal(raw, &ev))
		got = append(got, ev)
	}
	return got
}

// stillShuttingDown fails the test when Shutdown has returned.
func stillShuttingDown(t *testing.T, shut <-chan error) {
	t.Helper()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a turn was running", err)
	default:
	}
}

// TestShutdownLetsTurnsFinish: a reply turn running when Shutdown begins
// goes on working for its still connected extension, as net/http lets an
// active request write its response: its text and a browser command made
// with the turn's context go through, an approval fails at once with
// ErrClosed (nobody waits for a person during a shutdown), and its
// RUN_FINISHED reaches the panel before the hub closes the connection with
// 1001. Shutdown returns after the turn. Calls outside the turn, new panel
// messages and new connections are refused.
func TestShutdownLetsTurnsFinish(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run(map[int]string{0: "classic", 2: "protocol 2"}[proto], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				proceed := make(chan struct{})
				var hub *Hub
				var approvalErr, commandErr error
				be := newReplyBackend(func(ctx context.Context, t *Turn) error {
					<-proceed // Shutdown has begun
					_, approvalErr = t.RequestApproval(ctx, ApprovalRequest{ID: "late", ToolName: "Bash"})
					_, commandErr = hub.Read(ctx, "")
					return t.Say(ctx, "a-1", "finished after shutdown began")
				})
				e := newEnv(t, HubOptions{Backend: be})
				hub = e.hub
				ext := e.dial(extbridgetest.Options{Protocol: proto,
					Browser: answer(func(*extbridgetest.Command) *extbridgetest.Result {
						return &extbridgetest.Result{Content: "page text"}
					})})
				sendMessage(t, ext, proto, "work")
				<-be.started

				shut := make(chan error, 1)
				go func() { shut <- e.hub.Shutdown(t.Context()) }()
				synctest.Wait()
				stillShuttingDown(t, shut)
				// Refused while draining: calls outside the turn, a new
				// panel message's turn, new connections.
				assert.ErrorIs(t, e.hub.Emit(t.Context(), TextMessageEnd("x")), ErrClosed)
				_, err := e.hub.Read(t.Context(), "")
				assert.ErrorIs(t, err, ErrClosed)
				assert.ErrorIs(t, e.hub.newReply(t.Context()).StartTurn("c", "r",
					func(context.Context, *Turn) error { return nil }), ErrClosed)
				_, _, err = e.dialRaw(extbridgetest.Options{})
				assert.Error(t, err)

				close(proceed)
				got := eventsUntil(t, ext, func(e turnEvent) bool { return e.Type == string(EventRunFinished) })
				require.NoError(t, <-be.ended)
				assert.ErrorIs(t, approvalErr, ErrClosed)
				assert.NoError(t, commandErr, "a running turn's browser command goes through")
				require.GreaterOrEqual(t, len(got), 4)
				assert.Equal(t, []turnEvent{
					{Type: "TEXT_MESSAGE_START"},
					{Type: "TEXT_MESSAGE_CONTENT", Delta: "finished after shutdown began"},
					{Type: "TEXT_MESSAGE_END"},
					{Type: "RUN_FINISHED", RunID: "run-1"},
				}, got[len(got)-4:])

				require.NoError(t, <-shut)
				<-ext.Done()
				assert.Equal(t, websocket.StatusGoingAway, ext.CloseStatus())
			})
		})
	}
}

// TestShutdownDeadlineCancelsTurn: a reply turn that never ends keeps
// working through Shutdown (its text reaches the panel) until Shutdown's
// context ends; Shutdown then falls back to Close, which cancels the turn
// and waits for it, and returns ctx's error.
func TestShutdownDeadlineCancelsTurn(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run(map[int]string{0: "classic", 2: "protocol 2"}[proto], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				proceed := make(chan struct{})
				be := newReplyBackend(func(ctx context.Context, t *Turn) error {
					<-proceed
					if err := t.Say(ctx, "a-1", "still working"); err != nil {
						return err
					}
					<-ctx.Done()
					return ctx.Err()
				})
				e := newEnv(t, HubOptions{Backend: be})
				ext := e.dial(extbridgetest.Options{Protocol: proto})
				sendMessage(t, ext, proto, "work")
				<-be.started

				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				start := time.Now()
				shut := make(chan error, 1)
				go func() { shut <- e.hub.Shutdown(ctx) }()
				synctest.Wait()
				close(proceed)
				working := turnEvent{Type: "TEXT_MESSAGE_CONTENT", Delta: "still working"}
				got := eventsUntil(t, ext, func(e turnEvent) bool { return e == working || e.Type == string(EventRunFinished) })
				assert.Equal(t, working, got[len(got)-1], "the turn's text reached the panel during Shutdown")

				err := <-shut
				assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
				assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown waited for the turn until its deadline")
				select {
				case err := <-be.ended:
					assert.ErrorIs(t, err, context.Canceled, "Close cancelled the turn")
				default:
					t.Fatal("Shutdown returned while a reply turn was still running")
				}
				<-ext.Done()
			})
		})
	}
}

// TestShutdownWaitsForRunTurn: a turn the program runs itself with RunTurn
// is a running turn too: Shutdown lets it finish and waits for it, and,
// once Shutdown's context has ended, Close cancels it.
func TestShutdownWaitsForRunTurn(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run(map[int]string{0: "classic", 2: "protocol 2"}[proto], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{})
				ext := e.dial(extbridgetest.Options{Protocol: proto})
				started, proceed := make(chan struct{}), make(chan struct{})
				ended := make(chan error, 1)
				go func() {
					ended <- e.hub.RunTurn(t.Context(), "conv-1", "run-1", func(ctx context.Context, t *Turn) error {
						close(started)
						<-proceed
						return t.Say(ctx, "a-1", "done")
					})
				}()
				<-started
				shut := make(chan error, 1)
				go func() { shut <- e.hub.Shutdown(t.Context()) }()
				synctest.Wait()
				stillShuttingDown(t, shut)
				close(proceed)
				got := eventsUntil(t, ext, func(e turnEvent) bool { return e.Type == string(EventRunFinished) })
				assert.Equal(t, turnEvent{Type: "RUN_FINISHED", RunID: "run-1"}, got[len(got)-1])
				assert.Contains(t, got, turnEvent{Type: "TEXT_MESSAGE_CONTENT", Delta: "done"})
				require.NoError(t, <-ended)
				require.NoError(t, <-shut)
			})
		})
	}
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, HubOptions{})
			e.dial(extbridgetest.Options{})
			started := make(chan struct{})
			ended := make(chan error, 1)
			go func() {
				ended <- e.hub.RunTurn(t.Context(), "conv-1", "run-1", func(ctx context.Context, _ *Turn) error {
					close(started)
					<-ctx.Done()
					return ctx.Err()
				})
			}()
			<-started
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			assert.ErrorIs(t, e.hub.Shutdown(ctx), context.DeadlineExceeded)
			assert.ErrorIs(t, <-ended, context.Canceled, "Close cancelled the turn")
		})
	})
}
