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
	// ID identifies the request (request_id; in protocol 2 the interrupt
	// id and the tool call's toolCallId). Empty: the hub makes one.
	ID       string
	ToolName string // e.g. "Bash"
	ToolArgs string // the raw tool-call arguments JSON; may be empty
	// ThreadID is the conversation the call belongs to, for protocol 2's
	// runs. Default: the turn's thread ([Turn.RequestApproval]), else the
	// conversation the panel last followed.
	ThreadID string
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

// approvalKind tells the three kinds of pending request apart.
type approvalKind int

const (
	kindAgent    approvalKind = iota // an agent tool call (RequestApproval)
	kindTool                         // a panel tool_request's approval
	kindQuestion                     // a question to the user (RequestInput)
)

type pendingApproval struct {
	req  ApprovalRequest
	kind approvalKind
	conn *extConn // kindTool: the requesting connection
	turn *Turn    // the turn the request suspends; nil outside turns
	// For protocol 2: the run the request suspends (the turn's, or one the
	// hub opens for a request outside turns) and the question's schema.
	threadID, runID string
	schema          json.RawMessage
	suspended       bool // guarded by Hub.mu: a protocol-2 rendering was sent
	done            chan approvalOutcome
	once            sync.Once
}

type approvalOutcome struct {
	decision Decision
	payload  json.RawMessage // a question's answer
	err      error
}

func (a *pendingApproval) finish(o approvalOutcome) {
	a.once.Do(func() { a.done <- o })
}

// framesLocked renders the request for connection c (h.mu held): an
// approval_request frame in the classic dialect; in protocol 2 a CUSTOM
// approval_request event for a tool request, and for the agent's calls and
// questions the tool call (TOOL_CALL_START/ARGS/END) and the run's end
// with an interrupt outcome, after a RUN_STARTED of the hub's own run when
// the request was raised outside a turn.
func (a *pendingApproval) framesLocked(c *extConn) [][]byte {
	if !c.p2() {
		if a.kind == kindQuestion {
			// Display only: the classic panel has no question form; the
			// terminal answers (ResolveInput).
			return [][]byte{c.eventFrame(ToolCallStart(a.req.ID, a.req.ToolName, "")),
				c.eventFrame(ToolCallArgs(a.req.ID, a.req.ToolArgs)), c.eventFrame(ToolCallEnd(a.req.ID))}
		}
		b, _ := json.Marshal(approvalRequestFrame{
			Type: typeApprovalReq, RequestID: a.req.ID, ToolName: a.req.ToolName, ToolArgs: a.req.ToolArgs,
		})
		return [][]byte{b}
	}
	if a.kind == kindTool {
		e, _ := Custom(typeApprovalReq, struct {
			Type       string `json:"type"`
			ToolName   string `json:"tool_name"`
			ToolArgs   string `json:"tool_args"`
			ToolCallID string `json:"tool_call_id"`
		}{typeApprovalReq, a.req.ToolName, a.req.ToolArgs, a.req.ID})
		return [][]byte{e.raw}
	}
	var frames [][]byte
	if a.turn == nil {
		frames = append(frames, RunStarted(a.threadID, a.runID).raw)
	}
	frames = append(frames, ToolCallStart(a.req.ID, a.req.ToolName, "").raw)
	if a.req.ToolArgs != "" {
		frames = append(frames, ToolCallArgs(a.req.ID, a.req.ToolArgs).raw)
	}
	frames = append(frames, ToolCallEnd(a.req.ID).raw)
	reason := "tool_call"
	if a.kind == kindQuestion {
		reason = "input_required"
	}
	frames = append(frames, runInterrupted(a.threadID, a.runID, interrupt{
		ID: a.req.ID, Reason: reason, ToolCallID: a.req.ID, ResponseSchema: a.schema,
	}).raw)
	a.suspended = true
	return frames
}

// interrupt is one entry of a RUN_FINISHED interrupt outcome.
type interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
}

// runInterrupted is the RUN_FINISHED that suspends a run on interrupts.
func runInterrupted(threadID, runID string, its ...interrupt) ChatEvent {
	type outcome struct {
		Type       string      `json:"type"`
		Interrupts []interrupt `json:"interrupts"`
	}
	return mustEvent(EventRunFinished, struct {
		Type     ChatEventType `json:"type"`
		ThreadID string        `json:"threadId"`
		RunID    string        `json:"runId"`
		Outcome  outcome       `json:"outcome"`
	}{EventRunFinished, threadID, runID, outcome{"interrupt", its}})
}

// RequestApproval asks the user to approve a tool call and blocks until the
// request is answered, in the panel or through ResolveApproval (the first
// answer wins), or until ctx is done (the request is then withdrawn and
// ctx's error returned). Classic extensions get an approval_request frame
// and, once answered, approval_resolved for this id only. On protocol 2
// the call is a tool call of a run on the conversation (req.ThreadID) that
// suspends with an interrupt: outside a turn the hub opens and closes that
// run itself; use [Turn.RequestApproval] inside a turn, whose run then
// suspends and continues as a new run when answered. The request waits
// while no extension is connected and is re-sent to every extension that
// connects while it is pending. After Close it returns [ErrClosed].
func (h *Hub) RequestApproval(ctx context.Context, req ApprovalRequest) (Decision, error) {
	o, err := h.request(ctx, req, kindAgent, nil, nil, nil)
	return o.decision, err
}

// RequestApproval asks for approval of a tool call of this turn: on
// protocol 2 the turn's run suspends (RUN_FINISHED with an interrupt
// outcome) and, once answered, continues as a new run (RUN_STARTED with a
// new runId; [Turn.CurrentRunID]). Otherwise as [Hub.RequestApproval].
func (t *Turn) RequestApproval(ctx context.Context, req ApprovalRequest) (Decision, error) {
	if req.ThreadID == "" {
		req.ThreadID = t.ThreadID
	}
	o, err := t.hub.request(ctx, req, kindAgent, nil, t, nil)
	return o.decision, err
}

// InputRequest asks the user a question, as the AskUserQuestion tool does.
type InputRequest struct {
	ID       string // the interrupt and tool call id; empty: the hub makes one
	ToolName string // the tool asking, e.g. "AskUserQuestion"
	ToolArgs string // the tool call's arguments JSON (the questions), which the panel renders
	// ResponseSchema is the JSON Schema of the answer's payload (a JSON
	// object). Optional.
	ResponseSchema json.RawMessage
	ThreadID       string // as [ApprovalRequest.ThreadID]
}

// InputResponse is the answer to an [InputRequest].
type InputResponse struct {
	Answered bool            // false: the user dismissed the question
	Payload  json.RawMessage // the answer (e.g. {"answers":[…]}); nil when dismissed
}

// RequestInput asks the user a question of this turn and blocks until it
// is answered (or ctx is done). On protocol 2 the run suspends with an
// input_required interrupt carrying the response schema, and the panel's
// resume payload is the answer. Classic panels have no question form:
// they show the tool call only, and [Hub.ResolveInput] answers it (from
// the terminal, say); the first answer wins.
func (t *Turn) RequestInput(ctx context.Context, req InputRequest) (*InputResponse, error) {
	if req.ThreadID == "" {
		req.ThreadID = t.ThreadID
	}
	if len(req.ResponseSchema) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(req.ResponseSchema, &obj) != nil {
			return nil, fmt.Errorf("extbridge: input request: response schema is not a JSON object")
		}
	}
	o, err := t.hub.request(ctx, ApprovalRequest{ID: req.ID, ToolName: req.ToolName, ToolArgs: req.ToolArgs,
		ThreadID: req.ThreadID}, kindQuestion, nil, t, req.ResponseSchema)
	if err != nil {
		return nil, err
	}
	return &InputResponse{Answered: o.decision == Approved, Payload: o.payload}, nil
}

// ResolveInput answers a pending question from another surface: payload
// is the answer, nil dismisses the question. It reports whether the
// question was still pending.
func (h *Hub) ResolveInput(id string, payload json.RawMessage) bool {
	a := h.peekApproval(id)
	if a == nil || a.kind != kindQuestion {
		return false
	}
	return h.resolveApproval(id, payload != nil, payload)
}

// request raises a pending request and waits for its answer. conn is set
// for a tool request's approval, which belongs to that connection: it is
// neither re-sent nor kept past it.
func (h *Hub) request(ctx context.Context, req ApprovalRequest, kind approvalKind, conn *extConn, turn *Turn,
	schema json.RawMessage) (approvalOutcome, error) {
	if req.ID == "" {
		req.ID = uuid.New()
	}
	a := &pendingApproval{req: req, kind: kind, conn: conn, turn: turn, schema: schema,
		done: make(chan approvalOutcome, 1)}
	a.threadID = req.ThreadID
	if a.threadID == "" {
		a.threadID = h.thread()
	}
	if turn != nil {
		a.runID = turn.CurrentRunID()
	} else {
		a.runID = uuid.New()
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return approvalOutcome{}, ErrClosed
	}
	if _, dup := h.approvals[req.ID]; dup {
		h.mu.Unlock()
		return approvalOutcome{}, fmt.Errorf("extbridge: approval request id %q is already pending", truncate(req.ID, 64))
	}
	h.approvals[req.ID] = a
	h.approvalSeq = append(h.approvalSeq, req.ID)
	target := h.cur.Load()
	if conn != nil {
		target = conn
	}
	var frames [][]byte
	if target != nil {
		frames = a.framesLocked(target)
	}
	h.mu.Unlock()

	for _, f := range frames {
		// A failure here is harmless: the request stays pending and is
		// re-sent on the next connection.
		if target.send(ctx, f) != nil {
			break
		}
	}
	var o approvalOutcome
	select {
	case o = <-a.done:
	case <-ctx.Done():
		if h.takeApproval(req.ID) != nil {
			h.sendResolved(a)
			o = approvalOutcome{err: ctx.Err()}
		} else {
			o = <-a.done // answered just before ctx ended
		}
	}
	h.continueRun(ctx, a)
	return o, o.err
}

// continueRun follows a protocol-2 request that suspended its run: the
// turn continues as a new run (RUN_STARTED with a new runId), and the
// hub's own run of a request outside turns is opened and closed at once.
func (h *Hub) continueRun(ctx context.Context, a *pendingApproval) {
	h.mu.Lock()
	suspended := a.suspended
	h.mu.Unlock()
	if !suspended || a.kind == kindTool {
		return
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.WriteTimeout)
	defer cancel()
	run := uuid.New()
	if a.turn != nil {
		a.turn.setRun(run)
		_ = h.Emit(ectx, RunStarted(a.threadID, run))
		return
	}
	_ = h.Emit(ectx, RunStarted(a.threadID, run))
	_ = h.Emit(ectx, RunFinished(a.threadID, run))
}

// ResolveApproval answers a pending approval request from another surface
// (the terminal, say). It reports whether the request was still pending: the
// first answer wins, later ones are no-ops.
func (h *Hub) ResolveApproval(id string, approve bool) bool {
	if a := h.peekApproval(id); a == nil || a.kind == kindQuestion {
		return false
	}
	return h.resolveApproval(id, approve, nil)
}

func (h *Hub) resolveApproval(id string, approve bool, payload json.RawMessage) bool {
	a := h.takeApproval(id)
	if a == nil {
		return false
	}
	d := Rejected
	if approve {
		d = Approved
	}
	if a.kind != kindQuestion || !approve {
		payload = nil
	}
	h.sendResolved(a)
	a.finish(approvalOutcome{decision: d, payload: payload})
	return true
}

// resolveInterrupt answers an interrupt from a protocol-2 resume entry: an
// agent tool call's approval or a question (payload is its answer). A
// panel tool request's approval is answered by approval_response instead.
func (h *Hub) resolveInterrupt(id string, resolved bool, payload json.RawMessage) bool {
	if a := h.peekApproval(id); a == nil || a.kind == kindTool {
		return false
	}
	return h.resolveApproval(id, resolved, payload)
}

func (h *Hub) peekApproval(id string) *pendingApproval {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.approvals[id]
}

// PendingApprovals returns the approval requests not yet answered, oldest
// first.
func (h *Hub) PendingApprovals() []ApprovalRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ApprovalRequest, 0, len(h.approvalSeq))
	for _, id := range h.approvalSeq {
		if a := h.approvals[id]; a.kind != kindQuestion {
			out = append(out, a.req)
		}
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

// sendResolved tells the panel that request a is no longer pending: the
// classic approval_resolved frame for its id only, or, in protocol 2, the
// CUSTOM approval_resolved event of a tool request's approval. (An
// interrupt is cleared by the continuation run's RUN_STARTED.)
func (h *Hub) sendResolved(a *pendingApproval) {
	target := a.conn
	if target == nil {
		target = h.cur.Load()
	}
	if target == nil {
		return
	}
	var frame []byte
	switch {
	case !target.p2() && a.kind != kindQuestion:
		frame, _ = json.Marshal(approvalResolvedFrame{Type: typeApprovalDone, RequestID: a.req.ID})
	case target.p2() && a.kind == kindTool:
		e, _ := Custom(typeApprovalDone, struct {
			ToolCallID string `json:"tool_call_id"`
		}{a.req.ID})
		frame = e.raw
	default:
		return
	}
	ctx, cancel := context.WithTimeout(target.ctx, h.opts.WriteTimeout)
	defer cancel()
	_ = target.send(ctx, frame)
}
