package extbridge

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		raw   string
		proto ProtocolVersion
		ack   string
	}{
		{"", ProtocolClassic, `{"type":"browser_hello_ack"}`},
		{`"2"`, ProtocolClassic, `{"type":"browser_hello_ack"}`},
		{`2.5`, ProtocolClassic, `{"type":"browser_hello_ack"}`},
		{`null`, ProtocolClassic, `{"type":"browser_hello_ack"}`},
		{`1`, ProtocolClassic, `{"type":"browser_hello_ack","protocol_version":1}`},
		{`0`, ProtocolClassic, `{"type":"browser_hello_ack","protocol_version":1}`},
		{`2`, Protocol2, `{"type":"browser_hello_ack","protocol_version":2}`},
		{`7`, Protocol2, `{"type":"browser_hello_ack","protocol_version":2}`},
		{`99999999999999999999999`, Protocol2, `{"type":"browser_hello_ack","protocol_version":2}`},
		{`-99999999999999999999999`, ProtocolClassic, `{"type":"browser_hello_ack"}`},
		{`-1`, ProtocolClassic, `{"type":"browser_hello_ack","protocol_version":1}`},
	}
	for _, tt := range tests {
		proto, ack := negotiate(json.RawMessage(tt.raw))
		assert.Equal(t, tt.proto, proto, tt.raw)
		assert.Equal(t, tt.ack, string(ack), tt.raw)
	}
}

// p2Backend records what each call was scoped to.
type p2Backend struct {
	BaseBackend
	mu       sync.Mutex
	projects map[string]string // method → ProjectDir(ctx)
	session  SessionOptions
	got      chan UserMessage
}

func (b *p2Backend) saw(ctx context.Context, method string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.projects == nil {
		b.projects = map[string]string{}
	}
	b.projects[method] = ProjectDir(ctx)
}

func (b *p2Backend) ListConversations(ctx context.Context) ([]Conversation, error) {
	b.saw(ctx, "list_conversations")
	return nil, nil
}

func (b *p2Backend) ListHistory(ctx context.Context) ([]string, error) {
	b.saw(ctx, "list_history")
	return []string{"earlier"}, nil
}

func (b *p2Backend) ListSkills(ctx context.Context) ([]PanelSkill, error) {
	b.saw(ctx, "list_skills")
	return nil, nil
}

func (b *p2Backend) ListModels(ctx context.Context) (Models, error) {
	b.saw(ctx, "list_models")
	return Models{Models: []string{"a/b"}, Current: "a/b"}, nil
}

func (b *p2Backend) SetMode(ctx context.Context, _ Mode) error {
	b.saw(ctx, "set_mode")
	return nil
}

func (b *p2Backend) SelectModel(ctx context.Context, _ string) error {
	b.saw(ctx, "select_model")
	return nil
}

func (b *p2Backend) ResumeConversation(ctx context.Context, id string) (*ConversationSnapshot, error) {
	b.saw(ctx, "resume_conversation")
	if id != "conv1" {
		return nil, ErrUnknownConversation
	}
	return &ConversationSnapshot{
		Messages: []json.RawMessage{
			json.RawMessage(`{"id":{"odd":true},"role":"system","content":"be brief"}`),
			json.RawMessage(`{"id":7,"role":"user","content":"list files"}`),
			json.RawMessage(`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]}`),
			json.RawMessage(`{"role":"tool","content":"a b","tool_call_id":"c1"}`),
			json.RawMessage(`{"role":"assistant","tool_calls":[{"id":"c2","function":{"name":"Read","arguments":{"path":"x"}}}]}`),
			json.RawMessage(`{"role":"tool","content":"","tool_call_id":"c2"}`),
			json.RawMessage(`{"role":"tool","content":"orphan"}`),
			json.RawMessage(`{"role":"narrator","content":"unknown role"}`),
			json.RawMessage(`{"id":"u9","role":"user","content":[{"type":"text","text":"look"},{"type":"image","mimeType":"image/png","data":"AAAA","filename":"a.png"}]}`),
		},
		ToolResults: map[string]bool{"c1": true, "c2": false},
	}, nil
}

func (b *p2Backend) NewSession(ctx context.Context, opts SessionOptions) (*ConversationSnapshot, error) {
	b.saw(ctx, "new_session")
	b.mu.Lock()
	b.session = opts
	b.mu.Unlock()
	return &ConversationSnapshot{}, nil
}

func (b *p2Backend) UserMessage(_ context.Context, m UserMessage, _ *Reply) error {
	b.got <- m
	return nil
}

// p2Events collects the frames a protocol-2 fake received and returns the
// AG-UI events among them.
func p2Events(frames []extbridgetest.Frame) []extbridgetest.Frame {
	var out []extbridgetest.Frame
	for _, f := range frames {
		if f.IsEvent() {
			out = append(out, f)
		}
	}
	return out
}

type p2Event struct {
	Type     string `json:"type"`
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	Name     string `json:"name"`
	Message  string `json:"message"`
	Value    struct {
		Type       string `json:"type"`
		ToolCallID string `json:"tool_call_id"`
		ToolName   string `json:"tool_name"`
	} `json:"value"`
	Outcome *struct {
		Type       string                    `json:"type"`
		Interrupts []extbridgetest.Interrupt `json:"interrupts"`
	} `json:"outcome"`
	Messages []map[string]any `json:"messages"`
}

func decodeEvent(t *testing.T, f extbridgetest.Frame) p2Event {
	t.Helper()
	var ev p2Event
	require.NoError(t, json.Unmarshal(f.Raw, &ev), string(f.Raw))
	return ev
}

// nextEvent returns the next frame, which must be an AG-UI event of type
// typ.
func nextEvent(t *testing.T, ext *extbridgetest.Extension, typ ChatEventType) p2Event {
	t.Helper()
	f := next(t, ext)
	require.Equal(t, string(typ), f.Type, string(f.Raw))
	return decodeEvent(t, f)
}

// TestProtocol2 drives every protocol-2 behaviour through the fake
// extension's protocol-2 mode and checks every AG-UI event the hub sent
// with @ag-ui/core 1.0's schemas.
func TestProtocol2(t *testing.T) {
	validator := newAGUIValidator(t)
	var received []extbridgetest.Frame
	synctest.Test(t, func(t *testing.T) {
		be := &p2Backend{got: make(chan UserMessage, 4)}
		e := newEnv(t, HubOptions{
			Backend: be,
			Tools: ToolHandlerFunc(func(ctx context.Context, req *ToolRequest) (*ToolResponse, error) {
				return &ToolResponse{Success: true, Output: ProjectDir(ctx)}, nil
			}),
			ToolNeedsApproval: func(context.Context, *ToolRequest) bool { return true },
		})
		ext := e.dial(extbridgetest.Options{Protocol: 2, ProjectDir: "/proj"})
		t.Cleanup(func() { received = ext.Received() })
		assert.Equal(t, 2, ext.AckProtocol())
		info, ok := e.hub.Extension()
		require.True(t, ok)
		assert.Equal(t, Protocol2, info.ProtocolVersion)
		assert.Equal(t, "extension", info.Client)
		ctx := t.Context()

		// Scoped frames reach the Backend with their project dir.
		require.NoError(t, ext.Reconnected(ctx, "conv1"))
		for _, typ := range []string{"conversations", "skills", "models", "history"} {
			assert.Equal(t, typ, next(t, ext).Type)
		}
		snap := nextEvent(t, ext, EventMessagesSnapshot)
		ids := make([]string, 0, len(snap.Messages))
		for _, m := range snap.Messages {
			ids = append(ids, m["id"].(string))
		}
		assert.Equal(t, []string{"conv1-0", "7", "conv1-2", "conv1-3", "conv1-4", "conv1-5", "u9"}, ids)
		assert.Equal(t, []any{map[string]any{"id": "c1", "type": "function",
			"function": map[string]any{"name": "Bash", "arguments": `{"command":"ls"}`}}}, snap.Messages[2]["toolCalls"])
		assert.Equal(t, "c1", snap.Messages[3]["toolCallId"])
		assert.NotContains(t, snap.Messages[3], "error")
		assert.Equal(t, `{"path":"x"}`, snap.Messages[4]["toolCalls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"])
		assert.Equal(t, "the tool call failed", snap.Messages[5]["error"])
		assert.Equal(t, []any{map[string]any{"type": "text", "text": "look"},
			map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": "AAAA", "mimeType": "image/png"}}},
			snap.Messages[6]["content"])
		_, err := ext.SetMode(ctx, "auto")
		require.NoError(t, err)
		_, err = ext.SelectModel(ctx, "a/b")
		require.NoError(t, err)
		assert.Equal(t, "mode", next(t, ext).Type)
		require.NoError(t, ext.NewChat(ctx))
		assert.Empty(t, nextEvent(t, ext, EventMessagesSnapshot).Messages)
		require.NoError(t, ext.Send(ctx, map[string]any{"type": "new_session", "project_dir": "/proj",
			"model": "x/y", "mode": "plan", "max_turns": 3, "sandbox_directories": []string{"/tmp"}}))
		assert.Empty(t, nextEvent(t, ext, EventMessagesSnapshot).Messages)
		be.mu.Lock()
		for _, m := range []string{"list_conversations", "list_history", "list_skills", "list_models",
			"resume_conversation", "set_mode", "select_model", "new_session"} {
			assert.Equal(t, "/proj", be.projects[m], m)
		}
		assert.Equal(t, SessionOptions{Model: "x/y", Mode: ModePlan, MaxTurns: 3, SandboxDirectories: []string{"/tmp"}}, be.session)
		be.mu.Unlock()

		// A relative project_dir is refused as the reference CLI does: a
		// RUN_ERROR without runId, and no Backend call.
		require.NoError(t, ext.Send(ctx, map[string]any{"type": "list_skills", "project_dir": "proj"}))
		refused := nextEvent(t, ext, EventRunError)
		assert.Empty(t, refused.RunID)

		// A panel message is a run_agent_input, with image parts.
		require.NoError(t, ext.RunInput(ctx, "", "hello", extbridgetest.Image{Filename: "a.png", MIMEType: "image/png", Data: "AAAA"}))
		msg := <-be.got
		assert.Equal(t, "hello", msg.Content)
		assert.Equal(t, []Image{{MIMEType: "image/png", Data: "AAAA", Filename: "a.png"}}, msg.Images)
		assert.Empty(t, msg.ThreadID)
		assert.NotEmpty(t, msg.RunID)
		assert.NotEmpty(t, msg.MessageID)

		// The reply turn: the user's message echoed, text, a tool call, an
		// approval interrupt resumed from the panel, a question.
		turnDone := make(chan error, 1)
		decisions := make(chan Decision, 1)
		answers := make(chan *InputResponse, 1)
		go func() {
			turnDone <- e.hub.RunTurn(ctx, "conv1", "run1", func(ctx context.Context, turn *Turn) error {
				if err := e.hub.Say(ctx, "u1", "user", msg.Content); err != nil {
					return err
				}
				if err := turn.Say(ctx, "a1", "working"); err != nil {
					return err
				}
				for _, ev := range []ChatEvent{ToolCallStart("t1", "Read", "a1"), ToolCallArgs("t1", `{"path":"x"}`),
					ToolCallEnd("t1"), ToolCallResult("r1", "t1", `{"success":true}`)} {
					if err := turn.Emit(ctx, ev); err != nil {
						return err
					}
				}
				state, err := StateSnapshot(map[string]int{"step": 1})
				if err != nil {
					return err
				}
				if err := turn.Emit(ctx, state); err != nil {
					return err
				}
				d, err := turn.RequestApproval(ctx, ApprovalRequest{ID: "call_1", ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
				if err != nil {
					return err
				}
				decisions <- d
				in, err := turn.RequestInput(ctx, InputRequest{ID: "q1", ToolName: "AskUserQuestion",
					ToolArgs:       `{"questions":[{"question":"Which?","options":[{"label":"A"}]}]}`,
					ResponseSchema: json.RawMessage(`{"type":"object"}`)})
				if err != nil {
					return err
				}
				answers <- in
				return nil
			})
		}()
		started := nextEvent(t, ext, EventRunStarted)
		assert.Equal(t, "conv1", started.ThreadID)
		assert.Equal(t, "run1", started.RunID)
		for _, typ := range []ChatEventType{EventTextMessageStart, EventTextMessageContent, EventTextMessageEnd,
			EventTextMessageStart, EventTextMessageContent, EventTextMessageEnd,
			EventToolCallStart, EventToolCallArgs, EventToolCallEnd, EventToolCallResult, EventStateSnapshot,
			EventToolCallStart, EventToolCallArgs, EventToolCallEnd} {
			nextEvent(t, ext, typ)
		}
		suspended := nextEvent(t, ext, EventRunFinished)
		assert.Equal(t, "run1", suspended.RunID)
		require.NotNil(t, suspended.Outcome)
		assert.Equal(t, "interrupt", suspended.Outcome.Type)
		assert.Equal(t, []extbridgetest.Interrupt{{ID: "call_1", Reason: "tool_call", ToolCallID: "call_1"}}, suspended.Outcome.Interrupts)
		assert.Equal(t, "conv1", ext.Thread())
		// An approval_response for an interrupt of another id changes nothing.
		require.NoError(t, ext.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: "other", Status: "resolved"}))
		require.NoError(t, ext.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: "call_1", Status: "resolved"}))
		assert.Equal(t, Approved, <-decisions)
		cont := nextEvent(t, ext, EventRunStarted)
		assert.Equal(t, "conv1", cont.ThreadID)
		assert.NotEqual(t, "run1", cont.RunID)
		// A late resume for the answered interrupt is ignored: the terminal
		// cannot answer it either.
		assert.False(t, e.hub.ResolveApproval("call_1", false))

		for _, typ := range []ChatEventType{EventToolCallStart, EventToolCallArgs, EventToolCallEnd} {
			nextEvent(t, ext, typ)
		}
		asked := nextEvent(t, ext, EventRunFinished)
		assert.Equal(t, cont.RunID, asked.RunID)
		require.NotNil(t, asked.Outcome)
		assert.Equal(t, "input_required", asked.Outcome.Interrupts[0].Reason)
		assert.JSONEq(t, `{"type":"object"}`, string(asked.Outcome.Interrupts[0].ResponseSchema))
		assert.False(t, e.hub.ResolveApproval("q1", true), "a question is not an approval")
		require.NoError(t, ext.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: "q1", Status: "resolved",
			Payload: json.RawMessage(`{"answers":[{"question":"Which?","selectedLabels":["A"]}]}`)}))
		in := <-answers
		assert.True(t, in.Answered)
		assert.JSONEq(t, `{"answers":[{"question":"Which?","selectedLabels":["A"]}]}`, string(in.Payload))
		cont2 := nextEvent(t, ext, EventRunStarted)
		require.NoError(t, <-turnDone)
		finished := nextEvent(t, ext, EventRunFinished)
		assert.Equal(t, cont2.RunID, finished.RunID)
		assert.Nil(t, finished.Outcome)

		// An interrupted turn ends with outcome cancelled, and no
		// interrupted frame.
		go func() {
			turnDone <- e.hub.RunTurn(ctx, "conv1", "run2", func(ctx context.Context, turn *Turn) error {
				<-ctx.Done()
				return ctx.Err()
			})
		}()
		nextEvent(t, ext, EventRunStarted)
		require.NoError(t, ext.Interrupt(ctx))
		assert.ErrorIs(t, <-turnDone, context.Canceled)
		cancelled := nextEvent(t, ext, EventRunFinished)
		require.NotNil(t, cancelled.Outcome)
		assert.Equal(t, "cancelled", cancelled.Outcome.Type)
		require.NoError(t, e.hub.SendInterrupted(ctx))

		// A failed turn: RUN_ERROR naming the run.
		err = e.hub.RunTurn(ctx, "conv1", "run3", func(context.Context, *Turn) error { return errors.New("model down") })
		assert.EqualError(t, err, "model down")
		nextEvent(t, ext, EventRunStarted)
		failed := nextEvent(t, ext, EventRunError)
		assert.Equal(t, "run3", failed.RunID)
		assert.Equal(t, "model down", failed.Message)

		// An approval outside any turn is a tool call of a run the hub
		// opens on the conversation; the terminal answers first.
		go func() {
			d, err := e.hub.RequestApproval(ctx, ApprovalRequest{ID: "call_2", ToolName: "Write"})
			if err == nil {
				decisions <- d
			}
		}()
		own := nextEvent(t, ext, EventRunStarted)
		assert.Equal(t, "conv1", own.ThreadID)
		nextEvent(t, ext, EventToolCallStart)
		nextEvent(t, ext, EventToolCallEnd) // no args: no TOOL_CALL_ARGS
		nextEvent(t, ext, EventRunFinished)
		assert.True(t, e.hub.ResolveApproval("call_2", false))
		assert.Equal(t, Rejected, <-decisions)
		nextEvent(t, ext, EventRunStarted)
		closed := nextEvent(t, ext, EventRunFinished)
		assert.Nil(t, closed.Outcome)
		// The panel's late resume for it is ignored.
		require.NoError(t, ext.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: "call_2", Status: "resolved"}))

		// A panel tool request's approval: CUSTOM approval_request to the
		// requester, approval_response {tool_call_id, approved}, CUSTOM
		// approval_resolved, then the result, run with the project dir.
		results := make(chan *extbridgetest.ToolResultFrame, 1)
		go func() {
			r, err := ext.CallTool(ctx, "Echo", `{"text":"hi"}`)
			if err == nil {
				results <- r
			}
		}()
		custom := nextEvent(t, ext, EventCustom)
		assert.Equal(t, "approval_request", custom.Name)
		assert.Equal(t, "approval_request", custom.Value.Type)
		assert.Equal(t, "Echo", custom.Value.ToolName)
		require.NotEmpty(t, custom.Value.ToolCallID)
		assert.Equal(t, []ApprovalRequest{{ID: custom.Value.ToolCallID, ToolName: "Echo", ToolArgs: `{"text":"hi"}`}},
			e.hub.PendingApprovals())
		// A resume cannot answer a tool request's approval.
		require.NoError(t, ext.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: custom.Value.ToolCallID, Status: "resolved"}))
		require.NoError(t, ext.ApproveTool(ctx, custom.Value.ToolCallID, true))
		resolved := nextEvent(t, ext, EventCustom)
		assert.Equal(t, "approval_resolved", resolved.Name)
		r := <-results
		assert.True(t, r.Success)
		assert.Equal(t, "/proj", r.Output)

		for _, f := range ext.Received() {
			assert.NotEqual(t, "chat_event", f.Type)
			assert.NotEqual(t, "interrupted", f.Type)
			assert.NotEqual(t, "approval_request", f.Type)
			assert.NotEqual(t, "conversation_snapshot", f.Type)
		}
	})

	// Every AG-UI event the hub sent passes @ag-ui/core 1.0's schemas, and
	// every event type the hub sends on protocol 2 was among them.
	events := p2Events(received)
	require.NotEmpty(t, events)
	seen := map[string]bool{}
	for _, f := range events {
		why, err := validator.Validate(f.Raw)
		require.NoError(t, err)
		assert.Empty(t, why, "%s", f.Raw)
		seen[f.Type] = true
	}
	for _, typ := range []ChatEventType{EventRunStarted, EventRunFinished, EventRunError, EventTextMessageStart,
		EventTextMessageContent, EventTextMessageEnd, EventToolCallStart, EventToolCallArgs, EventToolCallEnd,
		EventToolCallResult, EventStateSnapshot, EventMessagesSnapshot, EventCustom} {
		assert.True(t, seen[string(typ)], "no %s event was checked", typ)
	}
	// The validator is not vacuous.
	why, err := validator.Validate([]byte(`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}`))
	require.NoError(t, err)
	assert.NotEmpty(t, why)
	why, err = validator.Validate([]byte(`{"type":"MESSAGES_SNAPSHOT","messages":[{"role":"tool","content":"x"}]}`))
	require.NoError(t, err)
	assert.NotEmpty(t, why)
}

// TestBothDialectsOneHub serves a classic and a protocol-2 extension from
// one hub: each gets its own dialect, and an approval raised while the
// classic one was connected reaches the protocol-2 one as an interrupt,
// which it resumes.
func TestBothDialectsOneHub(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{Backend: &p2Backend{got: make(chan UserMessage, 1)}})
		ctx := t.Context()
		classic := e.dial(extbridgetest.Options{})
		assert.Equal(t, 0, classic.AckProtocol())
		require.NoError(t, e.hub.Emit(ctx, TextMessageContent("m", "hi")))
		assert.Equal(t, "chat_event", next(t, classic).Type)
		require.NoError(t, classic.Send(ctx, map[string]string{"type": "resume_conversation", "id": "conv1"}))
		assert.Equal(t, "conversation_snapshot", next(t, classic).Type)

		decisions := make(chan Decision, 1)
		turnDone := make(chan error, 1)
		go func() {
			turnDone <- e.hub.RunTurn(ctx, "conv1", "run1", func(ctx context.Context, turn *Turn) error {
				d, err := turn.RequestApproval(ctx, ApprovalRequest{ID: "call_1", ToolName: "Bash", ToolArgs: `{}`})
				decisions <- d
				return err
			})
		}()
		assert.Equal(t, []string{"RUN_STARTED", "approval_request"}, chatTypes(t, classic, 2))

		// The protocol-2 extension replaces the classic one.
		p2 := e.dial(extbridgetest.Options{Protocol: 2, ProjectDir: "/proj"})
		<-classic.Done()
		assert.Equal(t, 2, p2.AckProtocol())
		for _, typ := range []ChatEventType{EventToolCallStart, EventToolCallArgs, EventToolCallEnd} {
			nextEvent(t, p2, typ)
		}
		suspended := nextEvent(t, p2, EventRunFinished)
		assert.Equal(t, "run1", suspended.RunID)
		assert.Equal(t, "call_1", suspended.Outcome.Interrupts[0].ID)
		require.NoError(t, p2.Resume(ctx, extbridgetest.ResumeEntry{InterruptID: "call_1", Status: "cancelled"}))
		assert.Equal(t, Rejected, <-decisions)
		nextEvent(t, p2, EventRunStarted)
		require.NoError(t, <-turnDone)
		finished := nextEvent(t, p2, EventRunFinished)
		assert.NotEqual(t, "run1", finished.RunID)
		require.NoError(t, p2.Send(ctx, map[string]string{"type": "resume_conversation", "id": "conv1", "project_dir": "/proj"}))
		nextEvent(t, p2, EventMessagesSnapshot)

		// And a classic extension again: classic frames.
		again := e.dial(extbridgetest.Options{})
		<-p2.Done()
		require.NoError(t, e.hub.Emit(ctx, TextMessageContent("m", "back")))
		assert.Equal(t, "chat_event", next(t, again).Type)
	})
}

// Malformed and hostile protocol-2 frames are ignored or answered, never
// acted on wrongly, and the connection stays open.
func TestProtocol2HostileInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		be := &p2Backend{got: make(chan UserMessage, 64)}
		e := newEnv(t, HubOptions{Backend: be, Tools: ToolHandlerFunc(func(ctx context.Context, _ *ToolRequest) (*ToolResponse, error) {
			if ProjectDir(ctx) != "" {
				t.Error("a tool request with a relative project_dir was run")
			}
			return nil, ErrUnknownTool
		})})
		ext := e.dial(extbridgetest.Options{Protocol: 2})
		ctx := t.Context()
		many := make([]map[string]any, 40)
		for i := range many {
			many[i] = map[string]any{"id": "m", "role": "user", "content": "x"}
		}
		for _, raw := range []string{
			`{"type":"run_agent_input"}`,
			`{"type":"run_agent_input","input":null}`,
			`{"type":"run_agent_input","input":{"threadId":1}}`,
			`{"type":"run_agent_input","input":{"messages":[{"id":"a","role":"assistant","content":"not the user"}]}}`,
			`{"type":"run_agent_input","input":{"messages":[{"id":"a","role":"user","content":{"not":"parts"}}]}}`,
			`{"type":"run_agent_input","input":{"messages":[{"id":"a","role":"user","content":"   "}]}}`,
			`{"type":"run_agent_input","input":{"resume":[{"interruptId":"nobody","status":"resolved"}]}}`,
			`{"type":"run_agent_input","input":{"messages":[],"Resume":[{"interruptId":"x","status":"resolved"}]}}`,
			`{"type":"approval_response","tool_call_id":"nobody","approved":true}`,
			`{"type":"new_session","project_dir":"/p","mode":"godmode","max_turns":-4}`,
		} {
			require.NoError(t, ext.SendRaw(ctx, []byte(raw)), raw)
		}
		nextEvent(t, ext, EventMessagesSnapshot)
		be.mu.Lock()
		assert.Equal(t, SessionOptions{}, be.session, "an unknown mode and a negative max_turns are not passed")
		be.mu.Unlock()
		require.NoError(t, ext.Send(ctx, map[string]any{"type": "run_agent_input", "input": map[string]any{"messages": many}}))
		r, err := ext.CallTool(ctx, "Bash", `{}`)
		require.NoError(t, err)
		assert.False(t, r.Success)
		// The tool request above carried no project dir; one with a
		// relative dir is refused with a failed result.
		require.NoError(t, ext.Send(ctx, map[string]any{"type": "tool_request", "id": "t1", "tool_name": "Bash", "project_dir": "rel"}))
		f, err := ext.NextOfType(ctx, "tool_result")
		require.NoError(t, err)
		assert.JSONEq(t, `{"type":"tool_result","id":"t1","success":false,"output":"","error":"project_dir must be an absolute path"}`, string(f.Raw))
		assert.Len(t, be.got, maxInputMessages, "at most 16 user messages of one run_agent_input")
		assert.True(t, e.hub.Connected())
	})
}
