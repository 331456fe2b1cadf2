package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge"
	// The scripted side panel (Panel) is project-internal: this test
	// drives the internal engine under the public kit.
	ibt "github.com/agentbridge/agentbridge/internal/browsertest"
	iext "github.com/agentbridge/agentbridge/internal/extension"
)

// panelBackend answers the scripted panel's message with a turn: the
// user's message echoed, a streamed reply linking an artifact, an approval
// the panel answers (an interrupt on protocol 2), and a closing line.
type panelBackend struct {
	extbridge.BaseBackend
	artifact string      // the markdown image link of the artifact
	projects chan string // ProjectDir of the new_session calls
}

func (b *panelBackend) NewSession(ctx context.Context, _ extbridge.SessionOptions) (*extbridge.ConversationSnapshot, error) {
	select {
	case b.projects <- extbridge.ProjectDir(ctx):
	default:
	}
	return &extbridge.ConversationSnapshot{}, nil
}

func (b *panelBackend) UserMessage(_ context.Context, m extbridge.UserMessage, reply *extbridge.Reply) error {
	return reply.StartTurn("conv-e2e", "run-e2e", func(ctx context.Context, t *extbridge.Turn) error {
		if err := t.Echo(ctx, "u1", m.Content); err != nil {
			return err
		}
		if err := t.Emit(ctx, extbridge.TextMessageStart("a1", "assistant")); err != nil {
			return err
		}
		for _, chunk := range []string{"Here ", "is a ", "cat: ", b.artifact} {
			if err := t.Emit(ctx, extbridge.TextMessageContent("a1", chunk)); err != nil {
				return err
			}
		}
		if err := t.Emit(ctx, extbridge.TextMessageEnd("a1")); err != nil {
			return err
		}
		d, err := t.RequestApproval(ctx, extbridge.ApprovalRequest{ID: "call-e2e", ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
		if err != nil {
			return err
		}
		return t.Say(ctx, "a2", "the panel said "+d.String())
	})
}

// TestExtensionBridgeDialectsInChromium runs the reference extension in
// Chromium as a panel of each dialect against the hub: chat streamed to
// it, an approval it answers (on protocol 2 an interrupt it resumes), a
// tool request of its own approved in it, an artifact it loads.
func TestExtensionBridgeDialectsInChromium(t *testing.T) {
	ibt.SkipWithoutChromium(t)
	for _, proto := range []int{0, 2} {
		name := "classic"
		if proto == 2 {
			name = "protocol 2"
		}
		t.Run(name, func(t *testing.T) { testPanelDialect(t, proto) })
	}
}

func testPanelDialect(t *testing.T, proto int) {
	base := t.TempDir()
	projectDir := filepath.Join(base, "work", "proj")
	artifacts := filepath.Join(base, "artifacts")
	projects := filepath.Join(base, "projects")
	link := "![cat](/home/u/.infer/artifacts/img/cat.txt)"
	dir := filepath.Join(artifacts, "img")
	if proto == 2 {
		link = "![cat](/home/u/.infer/projects/proj-slug/artifacts/img/cat.txt)"
		dir = filepath.Join(projects, "proj-slug", "artifacts", "img")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.MkdirAll(artifacts, 0o755))
	require.NoError(t, os.MkdirAll(projects, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cat.txt"), []byte("meow"), 0o644))

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	reports := make(chan iext.PanelReport, 64)
	be := &panelBackend{artifact: link, projects: make(chan string, 1)}
	token := newToken(t)
	connected := make(chan extbridge.ConnInfo, 4)
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{
		ArtifactsDir: artifacts,
		ProjectsDir:  projects,
		Backend:      be,
		Tools: extbridge.ToolHandlerFunc(func(ctx context.Context, req *extbridge.ToolRequest) (*extbridge.ToolResponse, error) {
			switch req.ToolName {
			case "PanelReport":
				var r iext.PanelReport
				if err := json.Unmarshal([]byte(req.ToolArgs), &r); err != nil {
					return nil, err
				}
				select {
				case reports <- r:
				default:
				}
				return &extbridge.ToolResponse{Success: true}, nil
			case "Echo":
				var args struct{ Text string }
				if err := json.Unmarshal([]byte(req.ToolArgs), &args); err != nil {
					return nil, err
				}
				return &extbridge.ToolResponse{Success: true, Output: args.Text + " @ " + extbridge.ProjectDir(ctx)}, nil
			}
			return nil, extbridge.ErrUnknownTool
		}),
		ToolNeedsApproval: func(_ context.Context, req *extbridge.ToolRequest) bool { return req.ToolName == "Echo" },
		OnConnect:         func(ci extbridge.ConnInfo) { connected <- ci },
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	t.Cleanup(func() {
		hub.Close() // also ends the reply turns and waits for them
		assert.ErrorIs(t, <-served, extbridge.ErrServerClosed)
	})

	ibt.Start(t, &ibt.Options{Extension: iext.Config{
		DisableNative: true,
		HubPort:       l.Addr().(*net.TCPAddr).Port,
		HubToken:      token,
		HubBackoffMin: 100 * time.Millisecond,
		HubBackoffMax: 500 * time.Millisecond,
		Approvals:     iext.ApprovalApprove,
		HubProtocol:   proto,
		HubProjectDir: projectDir,
		Panel:         &iext.Panel{Message: "hello from the panel", ToolName: "Echo", ToolArgs: `{"text":"hi"}`},
	}})
	var info extbridge.ConnInfo
	select {
	case info = <-connected:
	case <-ctx.Done():
		require.FailNow(t, "the extension never connected")
	}
	wantProto := extbridge.ProtocolClassic
	if proto == 2 {
		wantProto = extbridge.Protocol2
	}
	assert.Equal(t, wantProto, info.ProtocolVersion)

	// The reports come after every run's end and after the tool result:
	// wait for the one that has seen everything.
	var last iext.PanelReport
	done := func(r iext.PanelReport) bool {
		return r.ToolResult != nil && len(r.Artifacts) > 0 &&
			slices.ContainsFunc(r.Messages, func(m iext.PanelMessage) bool { return strings.HasPrefix(m.Text, "the panel said") })
	}
	for !done(last) {
		select {
		case last = <-reports:
		case <-ctx.Done():
			require.FailNow(t, "no complete panel report", "last: %+v", last)
		}
	}
	assert.Contains(t, last.Messages, iext.PanelMessage{Role: "user", Text: "hello from the panel"}, "the user's message echoed")
	assert.Contains(t, last.Messages, iext.PanelMessage{Role: "assistant", Text: "Here is a cat: " + link}, "streamed in chunks")
	assert.Contains(t, last.Messages, iext.PanelMessage{Role: "assistant", Text: "the panel said approved"})
	assert.Equal(t, []iext.PanelArtifact{{URL: last.Artifacts[0].URL, Status: 200, Body: "meow"}}, last.Artifacts)
	assert.True(t, last.ToolResult.Success, "%+v", last.ToolResult)
	assert.Equal(t, "conv-e2e", last.Thread)
	if proto == 2 {
		assert.Equal(t, "hi @ "+projectDir, last.ToolResult.Output, "the tool request carried the project dir")
		assert.Equal(t, []string{"call-e2e"}, last.Interrupts, "the approval was an interrupt, resumed from the panel")
		assert.Len(t, last.Approvals, 1, "the tool request's CUSTOM approval_request")
		assert.Contains(t, last.Artifacts[0].URL, "/artifacts/proj-slug/img/cat.txt")
		assert.Equal(t, projectDir, <-be.projects)
		assert.NotContains(t, last.Events, "chat_event")
		// The continuation run after the resume.
		assert.GreaterOrEqual(t, count(last.Events, "RUN_STARTED"), 2)
	} else {
		assert.Equal(t, "hi @ ", last.ToolResult.Output)
		assert.Empty(t, last.Interrupts)
		assert.Contains(t, last.Approvals, "call-e2e")
		assert.Len(t, last.Approvals, 2, "the agent's approval and the tool request's")
		assert.Contains(t, last.Artifacts[0].URL, "/artifacts/img/cat.txt")
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
