package extbridge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

type toolResultMsg struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Success bool   `json:"success"`
	Output  string `json:"output"`
	Error   string `json:"error"`
}

func nextToolResult(t *testing.T, ext *extbridgetest.Extension) toolResultMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), frameWait)
	defer cancel()
	f, err := ext.NextOfType(ctx, "tool_result")
	require.NoError(t, err)
	var r toolResultMsg
	require.NoError(t, f.Decode(&r))
	return r
}

var bash = ToolHandlerFunc(func(ctx context.Context, req *ToolRequest) (*ToolResponse, error) {
	switch req.ToolName {
	case "Bash":
		switch req.ToolArgs {
		case `{"command":"false"}`:
			return &ToolResponse{Output: "exit status 1 output", Error: "exit status 1"}, nil
		case `{"command":"sleep"}`:
			<-ctx.Done()
			return nil, ctx.Err()
		case `{"command":"boom"}`:
			return nil, errors.New("boom")
		}
		return &ToolResponse{Success: true, Output: "ran " + req.ToolArgs}, nil
	}
	return nil, fmt.Errorf("tool %s: %w", req.ToolName, ErrUnknownTool)
})

func sendTool(t *testing.T, ext *extbridgetest.Extension, id, name, args string) {
	t.Helper()
	require.NoError(t, ext.Send(t.Context(), map[string]string{"type": "tool_request", "id": id, "tool_name": name, "tool_args": args}))
}

func TestToolRequests(t *testing.T) {
	tests := []struct {
		name, tool, args string
		want             toolResultMsg
	}{
		{"success", "Bash", `{"command":"gh api user"}`, toolResultMsg{Success: true, Output: `ran {"command":"gh api user"}`}},
		{"non-zero exit keeps output", "Bash", `{"command":"false"}`, toolResultMsg{Output: "exit status 1 output", Error: "exit status 1"}},
		{"handler error", "Bash", `{"command":"boom"}`, toolResultMsg{Error: "boom"}},
		{"unknown tool", "Teleport", `{}`, toolResultMsg{Error: `unknown tool "Teleport"`}},
		{"missing tool name", "", `{}`, toolResultMsg{Error: "missing or invalid tool_name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{Tools: bash})
				ext := e.dial(extbridgetest.Options{Browser: extbridgetest.NewBrowser()})
				sendTool(t, ext, "t1", tt.tool, tt.args)
				got := nextToolResult(t, ext)
				tt.want.Type, tt.want.ID = "tool_result", "t1"
				assert.Equal(t, tt.want, got)
				// The socket is kept.
				_, err := e.hub.Tabs(t.Context())
				assert.NoError(t, err)
			})
		})
	}
}

func TestToolWithoutHandlerIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		sendTool(t, ext, "t1", "Bash", "{}")
		assert.Equal(t, toolResultMsg{Type: "tool_result", ID: "t1", Error: `unknown tool "Bash"`}, nextToolResult(t, ext))
	})
}

func TestToolApprovalGate(t *testing.T) {
	for _, action := range []string{"approve", "reject"} {
		t.Run(action, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{Tools: bash, ToolNeedsApproval: func(_ context.Context, r *ToolRequest) bool { return r.ToolName == "Bash" }})
				ext := e.dial(extbridgetest.Options{})
				sendTool(t, ext, "t1", "Bash", `{"command":"rm"}`)
				f := next(t, ext)
				require.Equal(t, "approval_request", f.Type)
				var req struct {
					RequestID string `json:"request_id"`
					ToolName  string `json:"tool_name"`
					ToolArgs  string `json:"tool_args"`
				}
				require.NoError(t, f.Decode(&req))
				assert.Equal(t, "Bash", req.ToolName)
				assert.Equal(t, `{"command":"rm"}`, req.ToolArgs)
				assert.NotEqual(t, "t1", req.RequestID, "the approval has its own request_id")
				require.NoError(t, ext.Send(t.Context(), map[string]string{"type": "approval_response", "request_id": req.RequestID, "action": action}))
				assert.Equal(t, "approval_resolved", next(t, ext).Type)
				got := nextToolResult(t, ext)
				if action == "approve" {
					assert.True(t, got.Success)
				} else {
					assert.Equal(t, toolResultMsg{Type: "tool_result", ID: "t1", Error: "rejected by the user"}, got)
				}
			})
		})
	}
}

func TestToolApprovalTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash, ToolNeedsApproval: func(context.Context, *ToolRequest) bool { return true }})
		ext := e.dial(extbridgetest.Options{})
		start := time.Now()
		sendTool(t, ext, "t1", "Bash", `{}`)
		assert.Equal(t, "approval_request", next(t, ext).Type)
		assert.Equal(t, "approval_resolved", next(t, ext).Type)
		assert.Equal(t, toolResultMsg{Type: "tool_result", ID: "t1", Error: "approval timed out"}, nextToolResult(t, ext))
		assert.Equal(t, DefaultToolApprovalTimeout, time.Since(start))
	})
}

func TestToolExactlyOneResultPerID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash})
		ext := e.dial(extbridgetest.Options{})
		release := make(chan struct{})
		e.hub.opts.Tools = ToolHandlerFunc(func(ctx context.Context, r *ToolRequest) (*ToolResponse, error) {
			<-release
			return &ToolResponse{Success: true, Output: r.ToolArgs}, nil
		})
		sendTool(t, ext, "same", "Bash", "first")
		sendTool(t, ext, "same", "Bash", "second")
		synctest.Wait()
		close(release)
		assert.Equal(t, "first", nextToolResult(t, ext).Output)
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_models"}`)))
		assert.Equal(t, "models", next(t, ext).Type, "no second result for the repeated id")
	})
}

func TestToolConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash, MaxConcurrentTools: 2})
		ext := e.dial(extbridgetest.Options{})
		sendTool(t, ext, "a", "Bash", `{"command":"sleep"}`)
		sendTool(t, ext, "b", "Bash", `{"command":"sleep"}`)
		sendTool(t, ext, "c", "Bash", `{}`)
		assert.Equal(t, toolResultMsg{Type: "tool_result", ID: "c", Error: "too many concurrent tool requests"}, nextToolResult(t, ext))
	})
}

func TestToolResultOfLostConnectionDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		release := make(chan struct{})
		started := make(chan struct{})
		e.hub.opts.Tools = ToolHandlerFunc(func(ctx context.Context, r *ToolRequest) (*ToolResponse, error) {
			close(started)
			<-release // ignores ctx on purpose: the result comes after the loss
			return &ToolResponse{Success: true}, nil
		})
		first := e.dial(extbridgetest.Options{})
		sendTool(t, first, "old", "Bash", "{}")
		<-started
		second := e.dial(extbridgetest.Options{}) // replaces first
		<-first.Done()
		close(release)
		synctest.Wait()
		require.NoError(t, second.SendRaw(t.Context(), []byte(`{"type":"list_models"}`)))
		assert.Equal(t, "models", next(t, second).Type, "the old id's result never reaches the new connection")
	})
}

// TestMalformedToolRequestGetsOneFailedResult: a tool_request whose id is
// readable but whose other fields are not (tool_args as an object) is
// answered with one failed result, never a dropped id.
func TestMalformedToolRequestGetsOneFailedResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Tools: bash})
		ext := e.dial(extbridgetest.Options{})
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"tool_request","id":"t9","tool_name":"Bash","tool_args":{"command":"ls"}}`)))
		got := nextToolResult(t, ext)
		assert.Equal(t, "t9", got.ID)
		assert.False(t, got.Success)
		assert.Equal(t, "invalid tool_request", got.Error)
		// The socket is kept.
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_models"}`)))
		assert.Equal(t, "models", next(t, ext).Type)
	})
}
