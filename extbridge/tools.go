package extbridge

import (
	"context"
	"errors"
	"fmt"
)

// ToolRequest is a tool_request from the extension: run one of the CLI's
// tools.
type ToolRequest struct {
	ID       string // the request id the result answers
	ToolName string // e.g. "Bash"
	ToolArgs string // the raw tool-arguments JSON; may be empty
}

// ToolResponse is the outcome of a tool request. A failed tool (Success
// false) may still carry Output, e.g. a command's output with a non-zero
// exit status.
type ToolResponse struct {
	Success bool
	Output  string
	Error   string
}

// ToolHandler runs the extension's tool requests. HandleTool is called in
// its own goroutine per request; ctx is cancelled when the connection ends
// (the result would be dropped anyway) and must be honoured. Return
// [ErrUnknownTool] for a tool the handler does not serve; any other error
// becomes a failed result carrying the error's text.
type ToolHandler interface {
	HandleTool(ctx context.Context, req *ToolRequest) (*ToolResponse, error)
}

// ToolHandlerFunc adapts a function to [ToolHandler].
type ToolHandlerFunc func(ctx context.Context, req *ToolRequest) (*ToolResponse, error)

// HandleTool calls f(ctx, req).
func (f ToolHandlerFunc) HandleTool(ctx context.Context, req *ToolRequest) (*ToolResponse, error) {
	return f(ctx, req)
}

// startTool runs one tool request. Exactly one tool_result is sent per id
// (a repeated id still in flight is ignored), on the connection that asked,
// and only while it is alive: results of a lost connection are dropped.
func (c *extConn) startTool(f *toolRequestFrame) {
	h := c.hub
	if f.ID == "" || len(f.ID) > maxRequestIDLength {
		c.ignored("tool_request without usable id", typeToolRequest, 0, nil)
		return
	}
	req := &ToolRequest{ID: f.ID, ToolName: f.ToolName, ToolArgs: f.ToolArgs}
	c.toolsMu.Lock()
	if _, dup := c.tools[f.ID]; dup {
		c.toolsMu.Unlock()
		c.ignored("duplicate tool_request id in flight", typeToolRequest, 0, nil)
		return
	}
	if f.decodeErr != nil {
		c.toolsMu.Unlock()
		c.ignored("malformed tool_request", typeToolRequest, 0, f.decodeErr)
		msg := "invalid tool_request"
		if errors.Is(f.decodeErr, errInvalidUTF8) {
			msg = "invalid tool_request: text is not valid UTF-8"
		}
		c.sendToolResult(req.ID, &ToolResponse{Error: msg})
		return
	}
	if f.ProjectDir != "" && !validProjectDir(f.ProjectDir) {
		c.toolsMu.Unlock()
		c.sendToolResult(req.ID, &ToolResponse{Error: "project_dir must be an absolute path"})
		return
	}
	if len(c.tools) >= h.opts.MaxConcurrentTools {
		c.toolsMu.Unlock()
		c.sendToolResult(req.ID, &ToolResponse{Error: "too many concurrent tool requests"})
		return
	}
	c.tools[f.ID] = struct{}{}
	c.wg.Add(1)
	c.toolsMu.Unlock()
	go func() {
		defer c.wg.Done()
		res := h.runTool(withProject(c.ctx, f.ProjectDir), c, req)
		c.sendToolResult(req.ID, res)
		c.toolsMu.Lock()
		delete(c.tools, req.ID)
		c.toolsMu.Unlock()
	}()
}

func (h *Hub) runTool(ctx context.Context, c *extConn, req *ToolRequest) *ToolResponse {
	if req.ToolName == "" || len(req.ToolName) > maxToolNameLen {
		return &ToolResponse{Error: "missing or invalid tool_name"}
	}
	if h.opts.Tools == nil {
		return unknownTool(req.ToolName)
	}
	if gate := h.opts.ToolNeedsApproval; gate != nil && gate(ctx, req) {
		actx, cancel := context.WithTimeout(ctx, h.opts.ToolApprovalTimeout)
		o, err := h.request(actx, ApprovalRequest{ID: approvalID(c, req), ToolName: req.ToolName, ToolArgs: req.ToolArgs},
			kindTool, c, nil, nil)
		cancel()
		d := o.decision
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded):
			return &ToolResponse{Error: "approval timed out"}
		case err != nil:
			return &ToolResponse{Error: "approval failed: " + err.Error()}
		case d != Approved:
			return &ToolResponse{Error: "rejected by the user"}
		}
	}
	if ctx.Err() != nil {
		// The connection ended (replaced, lost, closed): its result would
		// be dropped, so the tool is not run.
		return &ToolResponse{Error: "connection ended"}
	}
	res, err := h.opts.Tools.HandleTool(ctx, req)
	switch {
	case errors.Is(err, ErrUnknownTool):
		return unknownTool(req.ToolName)
	case err != nil:
		out := &ToolResponse{Error: err.Error()}
		if res != nil {
			out.Output = res.Output
		}
		return out
	case res == nil:
		return &ToolResponse{Success: true}
	}
	out := *res
	if out.Error != "" {
		out.Success = false
	}
	return &out
}

// approvalID is the id of a tool request's approval: a new one for
// classic extensions, the request's own id in protocol 2 (whose CUSTOM
// approval_request names the request by tool_call_id).
func approvalID(c *extConn, req *ToolRequest) string {
	if c.p2() {
		return req.ID
	}
	return ""
}

func unknownTool(name string) *ToolResponse {
	return &ToolResponse{Error: fmt.Sprintf("unknown tool %q", truncate(name, 64))}
}

// sendToolResult queues the result unless the connection has ended.
func (c *extConn) sendToolResult(id string, r *ToolResponse) {
	if c.ctx.Err() != nil {
		return // dropped: no result for this id may reach another connection
	}
	c.sendJSON(toolResultFrame{Type: typeToolResult, ID: id, Success: r.Success, Output: r.Output, Error: r.Error})
}
