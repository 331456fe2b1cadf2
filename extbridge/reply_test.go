package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// replyBackend answers every panel message with a turn started on its
// Reply: the message echoed, then turn(ctx, t). It never holds the hub.
type replyBackend struct {
	BaseBackend
	started chan struct{} // one per turn, once the echo is sent
	ended   chan error    // what each turn's fn returned
	turn    func(ctx context.Context, t *Turn) error
}

func newReplyBackend(turn func(ctx context.Context, t *Turn) error) *replyBackend {
	return &replyBackend{started: make(chan struct{}, 4), ended: make(chan error, 4), turn: turn}
}

func (b *replyBackend) UserMessage(_ context.Context, m UserMessage, reply *Reply) error {
	thread := m.ThreadID
	if thread == "" {
		thread = "conv-1"
	}
	return reply.StartTurn(thread, "run-1", func(ctx context.Context, t *Turn) error {
		err := t.Echo(ctx, "u-1", m.Content)
		if err == nil {
			b.started <- struct{}{}
			err = b.turn(ctx, t)
		}
		b.ended <- err
		return err
	})
}

// sendMessage sends a panel message in the fake's dialect.
func sendMessage(t *testing.T, ext *extbridgetest.Extension, proto int, text string) {
	t.Helper()
	if proto == 2 {
		require.NoError(t, ext.RunInput(t.Context(), "conv-1", text))
		return
	}
	require.NoError(t, ext.UserMessage(t.Context(), text))
}

// TestReplyTurn: a Backend built before the hub answers a panel message of
// either dialect with a whole turn, through its Reply alone.
func TestReplyTurn(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run(map[int]string{0: "classic", 2: "protocol 2"}[proto], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				be := newReplyBackend(func(ctx context.Context, t *Turn) error { return t.Say(ctx, "a-1", "hello back") })
				e := newEnv(t, HubOptions{Backend: be})
				ext := e.dial(extbridgetest.Options{Protocol: proto})
				sendMessage(t, ext, proto, "hello")
				require.NoError(t, <-be.ended)

				type event struct {
					Type, Role, Delta, ThreadID, RunID string
				}
				var got []event
				for len(got) == 0 || got[len(got)-1].Type != string(EventRunFinished) {
					f := next(t, ext)
					raw := f.Event()
					require.NotNil(t, raw, "%s", f.Raw)
					var ev event
					require.NoError(t, json.Unmarshal(raw, &ev))
					got = append(got, ev)
				}
				assert.Equal(t, []event{
					{Type: "RUN_STARTED", ThreadID: "conv-1", RunID: "run-1"},
					{Type: "TEXT_MESSAGE_START", Role: "user"},
					{Type: "TEXT_MESSAGE_CONTENT", Delta: "hello"},
					{Type: "TEXT_MESSAGE_END"},
					{Type: "TEXT_MESSAGE_START", Role: "assistant"},
					{Type: "TEXT_MESSAGE_CONTENT", Delta: "hello back"},
					{Type: "TEXT_MESSAGE_END"},
					{Type: "RUN_FINISHED", ThreadID: "conv-1", RunID: "run-1"},
				}, got)
			})
		})
	}
}

// TestCloseEndsReplyTurns: Close cancels the reply turns a Backend started
// and returns only once they have ended, leaving no goroutine behind.
func TestCloseEndsReplyTurns(t *testing.T) {
	for _, proto := range []int{0, 2} {
		t.Run(map[int]string{0: "classic", 2: "protocol 2"}[proto], func(t *testing.T) {
			be := newReplyBackend(func(ctx context.Context, _ *Turn) error {
				<-ctx.Done() // a turn that runs until the hub stops it
				return ctx.Err()
			})
			e := newEnv(t, HubOptions{Backend: be})
			ext := e.dial(extbridgetest.Options{Protocol: proto})
			sendMessage(t, ext, proto, "work")
			select {
			case <-be.started:
			case <-time.After(time.Minute):
				t.Fatal("the reply turn did not start")
			}
			require.NoError(t, e.hub.Close())
			select {
			case err := <-be.ended:
				assert.ErrorIs(t, err, context.Canceled)
			default:
				t.Fatal("Close returned while a reply turn was still running")
			}
			ext.Close()
			<-ext.Done()
			goleak.VerifyNone(t)
		})
	}
}

// TestShutdownWaitsForReplyTurns: Shutdown returns once the reply turns
// have ended: when they end by themselves (their frames still go out), else
// when Shutdown's context ends and the turns are cancelled.
func TestShutdownWaitsForReplyTurns(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			be := newReplyBackend(func(ctx context.Context, t *Turn) error {
				for range 3 {
					time.Sleep(time.Second)
					if err := t.Say(ctx, "a-1", "tick"); err != nil {
						return err
					}
				}
				return nil
			})
			e := newEnv(t, HubOptions{Backend: be})
			ext := e.dial(extbridgetest.Options{})
			sendMessage(t, ext, 0, "work")
			<-be.started
			start := time.Now()
			require.NoError(t, e.hub.Shutdown(t.Context()))
			assert.GreaterOrEqual(t, time.Since(start), 3*time.Second, "Shutdown waited for the turn")
			select {
			case err := <-be.ended:
				assert.NoError(t, err)
			default:
				t.Fatal("Shutdown returned while a reply turn was still running")
			}
			assert.ErrorIs(t, (&Reply{hub: e.hub, ctx: t.Context()}).StartTurn("c", "r", nil), ErrClosed)
			var none *Reply
			assert.ErrorIs(t, none.StartTurn("c", "r", nil), ErrClosed)
			assert.ErrorIs(t, new(Reply).StartTurn("c", "r", nil), ErrClosed)
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			be := newReplyBackend(func(ctx context.Context, _ *Turn) error {
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			e := newEnv(t, HubOptions{Backend: be})
			ext := e.dial(extbridgetest.Options{Protocol: 2})
			sendMessage(t, ext, 2, "work")
			<-be.started
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err := e.hub.Shutdown(ctx)
			assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
			assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown waited for the turn until its deadline")
			select {
			case err := <-be.ended:
				assert.ErrorIs(t, err, context.Canceled)
			default:
				t.Fatal("Shutdown returned while a reply turn was still running")
			}
		})
	})
}
