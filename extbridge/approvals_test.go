package extbridge

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

type approvalOut struct {
	d   Decision
	err error
}

func requestAsync(ctx context.Context, h *Hub, req ApprovalRequest) chan approvalOut {
	out := make(chan approvalOut, 1)
	go func() {
		d, err := h.RequestApproval(ctx, req)
		out <- approvalOut{d, err}
	}()
	return out
}

func TestApprovalFromPanel(t *testing.T) {
	tests := []struct {
		action string
		want   Decision
	}{
		{"approve", Approved},
		{"reject", Rejected},
		{"Approve", Rejected},
		{"allow_always", Rejected},
		{"", Rejected},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, HubOptions{})
				ext := e.dial(extbridgetest.Options{})
				out := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "r1", ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
				assert.JSONEq(t, `{"type":"approval_request","request_id":"r1","tool_name":"Bash","tool_args":"{\"command\":\"ls\"}"}`, string(next(t, ext).Raw))
				require.NoError(t, ext.Send(t.Context(), map[string]string{"type": "approval_response", "request_id": "r1", "action": tt.action}))
				o := <-out
				require.NoError(t, o.err)
				assert.Equal(t, tt.want, o.d)
				assert.JSONEq(t, `{"type":"approval_resolved","request_id":"r1"}`, string(next(t, ext).Raw))
				assert.Empty(t, e.hub.PendingApprovals())
			})
		})
	}
}

func TestApprovalFirstAnswerWinsAndResolvesOnlyItsID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		a := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "a", ToolName: "Bash"})
		assert.Equal(t, "approval_request", next(t, ext).Type)
		b := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "b", ToolName: "Write"})
		assert.Equal(t, "approval_request", next(t, ext).Type)
		assert.Len(t, e.hub.PendingApprovals(), 2)

		// The terminal answers a first; the panel's later answer is a no-op.
		assert.True(t, e.hub.ResolveApproval("a", true))
		assert.False(t, e.hub.ResolveApproval("a", false))
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"approval_response","request_id":"a","action":"reject"}`)))
		o := <-a
		require.NoError(t, o.err)
		assert.Equal(t, Approved, o.d)
		assert.JSONEq(t, `{"type":"approval_resolved","request_id":"a"}`, string(next(t, ext).Raw))

		// b is still pending: only a was resolved.
		assert.Equal(t, []ApprovalRequest{{ID: "b", ToolName: "Write"}}, e.hub.PendingApprovals())
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"approval_response","request_id":"b","action":"approve"}`)))
		o = <-b
		assert.Equal(t, Approved, o.d)
		assert.JSONEq(t, `{"type":"approval_resolved","request_id":"b"}`, string(next(t, ext).Raw))
		// No second approval_resolved for a was sent for the panel's late answer.
		require.NoError(t, ext.SendRaw(t.Context(), []byte(`{"type":"list_models"}`)))
		assert.Equal(t, "models", next(t, ext).Type)
	})
}

func TestApprovalResentOnReconnectWithoutChatReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		// Raised while no extension is connected.
		out := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "p1", ToolName: "Bash", ToolArgs: "{}"})
		synctest.Wait()
		first, err := e.connect(extbridgetest.Options{})
		require.NoError(t, err)
		assert.Equal(t, "mode", next(t, first).Type)
		assert.Equal(t, "approval_request", next(t, first).Type)
		require.NoError(t, e.hub.Emit(t.Context(), TextMessageContent("m1", "streamed while connected")))
		assert.Equal(t, "chat_event", next(t, first).Type)
		first.Close()
		synctest.Wait()
		require.NoError(t, e.hub.Emit(t.Context(), TextMessageContent("m1", "lost: nobody connected")))

		second, err := e.connect(extbridgetest.Options{})
		require.NoError(t, err)
		defer second.Close()
		assert.Equal(t, "mode", next(t, second).Type)
		f := next(t, second)
		assert.JSONEq(t, `{"type":"approval_request","request_id":"p1","tool_name":"Bash","tool_args":"{}"}`, string(f.Raw))
		// Nothing else was replayed: the next frame answers our request.
		require.NoError(t, second.SendRaw(t.Context(), []byte(`{"type":"list_skills"}`)))
		assert.Equal(t, "skills", next(t, second).Type)

		require.NoError(t, second.SendRaw(t.Context(), []byte(`{"type":"approval_response","request_id":"p1","action":"approve"}`)))
		assert.Equal(t, Approved, (<-out).d)
	})
}

func TestApprovalContextEndsWithdrawsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		ext := e.dial(extbridgetest.Options{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out := requestAsync(ctx, e.hub, ApprovalRequest{ID: "w"})
		assert.Equal(t, "approval_request", next(t, ext).Type)
		o := <-out
		assert.ErrorIs(t, o.err, context.DeadlineExceeded)
		assert.Equal(t, Rejected, o.d)
		assert.JSONEq(t, `{"type":"approval_resolved","request_id":"w"}`, string(next(t, ext).Raw))
		assert.Empty(t, e.hub.PendingApprovals())
	})
}

func TestApprovalClosedHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		out := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "c"})
		synctest.Wait()
		require.NoError(t, e.hub.Close())
		assert.ErrorIs(t, (<-out).err, ErrClosed)
		_, err := e.hub.RequestApproval(t.Context(), ApprovalRequest{})
		assert.ErrorIs(t, err, ErrClosed)
	})
}

func TestApprovalDuplicateID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		out := requestAsync(t.Context(), e.hub, ApprovalRequest{ID: "d"})
		synctest.Wait()
		_, err := e.hub.RequestApproval(t.Context(), ApprovalRequest{ID: "d"})
		assert.Error(t, err)
		e.hub.ResolveApproval("d", false)
		assert.Equal(t, Rejected, (<-out).d)
	})
}
