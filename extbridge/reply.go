package extbridge

import (
	"context"
	"errors"
)

// Reply is how a [Backend] answers one panel message: [Backend.UserMessage]
// gets one with each message, in the spirit of net/http's ResponseWriter.
// Through it the Backend starts its reply turn without holding the [Hub],
// so that it can be built before the hub, and the hub owns the turn's
// goroutine: [Hub.Shutdown] waits for it, [Hub.Close] cancels its context
// and waits for it.
//
// A Reply may be kept after UserMessage returns, for instance by an agent
// loop that answers queued messages in order; once the hub is closing,
// StartTurn returns [ErrClosed]. Its methods are safe for concurrent use.
type Reply struct {
	hub *Hub
	ctx context.Context // the hub's lifetime, carrying the message's ProjectDir
}

// StartTurn runs fn as one turn of conversation threadID, as [Hub.RunTurn]
// does (RUN_STARTED, then fn, then RUN_FINISHED, RUN_ERROR or a cancelled
// RUN_FINISHED; the panel's interrupt cancels it), in a goroutine of the
// hub, and returns at once: fn may wait for approvals and answers, which
// reach the hub through the frames UserMessage's caller goes on reading.
// On protocol 2, [UserMessage.ThreadID] and [UserMessage.RunID] name the
// conversation and the run the panel started.
//
// fn's context carries the message's [ProjectDir]; it is cancelled by
// [Hub.Close] (and by Shutdown once Shutdown's own context is done), not
// by the end of the connection the message came on, so that the turn
// carries on for the extension that reconnects. A turn running when
// [Hub.Shutdown] begins finishes as it would have: its frames and browser
// commands made with fn's context go on until it ends (its approvals and
// questions fail with ErrClosed), and its RUN_FINISHED or RUN_ERROR reaches
// the panel before the connection closes. An error of the turn
// other than a cancellation is logged ([HubOptions.Logger]); report what
// the user must see from fn itself. StartTurn returns [ErrClosed], without
// calling fn, once the hub is closing, and for a nil or zero Reply (one
// the hub did not make, as in a unit test of a Backend).
func (r *Reply) StartTurn(threadID, runID string, fn func(ctx context.Context, t *Turn) error) error {
	if r == nil || r.hub == nil {
		return ErrClosed
	}
	h := r.hub
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	// Added and registered under h.mu while the hub is open: Close and
	// Shutdown set closed before they wait, so no turn starts after the
	// wait began, and a turn accepted here runs even when Shutdown begins
	// before its goroutine does.
	h.wg.Add(1)
	t, tctx := h.openTurnLocked(r.ctx, threadID, runID)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		err := h.runTurn(tctx, t, fn)
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
			h.log.Warn("extbridge: reply turn failed", "err", err)
		}
	}()
	return nil
}

// newReply returns the Reply of a message whose Backend call has context
// callCtx.
func (h *Hub) newReply(callCtx context.Context) *Reply {
	return &Reply{hub: h, ctx: withProject(h.ctx, ProjectDir(callCtx))}
}
