package extbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/agentbridge/agentbridge/internal/uuid"
)

// ApprovalRequest asks the user to approve a tool call.
type ApprovalRequest struct {
	// ID identifies the request (request_id). Empty: the hub makes one.
	ID       string
	ToolName string // e.g. "Bash"
	ToolArgs string // the raw tool-call arguments JSON; may be empty
}

// Decision is the user's answer to an approval request.
type Decision int

// The two decisions. Anything the panel sends other than "approve" is a
// rejection.
const (
	Rejected Decision = iota
	Approved
)

// String returns "approved" or "rejected".
func (d Decision) String() string {
	if d == Approved {
		return "approved"
	}
	return "rejected"
}

type pendingApproval struct {
	req      ApprovalRequest
	frame    []byte
	toolOnly bool // raised for a tool request: not re-sent to another connection
	conn     *extConn
	done     chan approvalOutcome
	once     sync.Once
}

type approvalOutcome struct {
	decision Decision
	err      error
}

func (a *pendingApproval) finish(o approvalOutcome) {
	a.once.Do(func() { a.done <- o })
}

// RequestApproval sends an approval_request to the panel and blocks until
// the request is answered, in the panel or through ResolveApproval (the
// first answer wins), or until ctx is done (the request is then withdrawn
// with approval_resolved and ctx's error returned). The request waits while
// no extension is connected and is re-sent to every extension that
// connects while it is pending. Once answered, approval_resolved is sent for
// this id only. After Close it returns [ErrClosed].
func (h *Hub) RequestApproval(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return h.requestApproval(ctx, req, nil)
}

// requestApproval raises a request; when conn is set the request belongs to
// that connection's tool call and is neither re-sent nor kept past it.
func (h *Hub) requestApproval(ctx context.Context, req ApprovalRequest, conn *extConn) (Decision, error) {
	if req.ID == "" {
		req.ID = uuid.New()
	}
	frame, err := json.Marshal(approvalRequestFrame{
		Type: typeApprovalReq, RequestID: req.ID, ToolName: req.ToolName, ToolArgs: req.ToolArgs,
	})
	if err != nil {
		return Rejected, fmt.Errorf("extbridge: approval request: %w", err)
	}
	a := &pendingApproval{req: req, frame: frame, toolOnly: conn != nil, conn: conn, done: make(chan approvalOutcome, 1)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return Rejected, ErrClosed
	}
	if _, dup := h.approvals[req.ID]; dup {
		h.mu.Unlock()
		return Rejected, fmt.Errorf("extbridge: approval request id %q is already pending", truncate(req.ID, 64))
	}
	h.approvals[req.ID] = a
	h.approvalSeq = append(h.approvalSeq, req.ID)
	target := h.cur.Load()
	h.mu.Unlock()

	if conn != nil {
		target = conn
	}
	if target != nil {
		// A failure here is harmless: the request stays pending and is
		// re-sent on the next connection.
		_ = target.send(ctx, frame)
	}
	select {
	case o := <-a.done:
		return o.decision, o.err
	case <-ctx.Done():
		if h.takeApproval(req.ID) != nil {
			h.sendResolved(req.ID, conn)
			return Rejected, ctx.Err()
		}
		o := <-a.done // answered just before ctx ended
		return o.decision, o.err
	}
}

// ResolveApproval answers a pending approval request from another surface
// (the terminal, say). It reports whether the request was still pending: the
// first answer wins, later ones are no-ops.
func (h *Hub) ResolveApproval(id string, approve bool) bool {
	return h.resolveApproval(id, approve)
}

func (h *Hub) resolveApproval(id string, approve bool) bool {
	a := h.takeApproval(id)
	if a == nil {
		return false
	}
	d := Rejected
	if approve {
		d = Approved
	}
	h.sendResolved(id, a.conn)
	a.finish(approvalOutcome{decision: d})
	return true
}

// PendingApprovals returns the approval requests not yet answered, oldest
// first.
func (h *Hub) PendingApprovals() []ApprovalRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ApprovalRequest, 0, len(h.approvalSeq))
	for _, id := range h.approvalSeq {
		out = append(out, h.approvals[id].req)
	}
	return out
}

func (h *Hub) takeApproval(id string) *pendingApproval {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.approvals[id]
	if a == nil {
		return nil
	}
	delete(h.approvals, id)
	if i := slices.Index(h.approvalSeq, id); i >= 0 {
		h.approvalSeq = slices.Delete(h.approvalSeq, i, i+1)
	}
	return a
}

// sendResolved tells the panel that request id is no longer pending.
func (h *Hub) sendResolved(id string, conn *extConn) {
	target := conn
	if target == nil {
		target = h.cur.Load()
	}
	if target == nil {
		return
	}
	b, err := json.Marshal(approvalResolvedFrame{Type: typeApprovalDone, RequestID: id})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(target.ctx, h.opts.WriteTimeout)
	defer cancel()
	_ = target.send(ctx, b)
}
