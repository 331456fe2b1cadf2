package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lineSink is Run's stdout: it hands each output line to the test.
type lineSink struct {
	mu    sync.Mutex
	buf   string
	lines chan string
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf += string(p)
	for {
		line, rest, ok := strings.Cut(s.buf, "\n")
		if !ok {
			break
		}
		s.lines <- line
		s.buf = rest
	}
	return len(p), nil
}

type harness struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *lineSink
	dir   string
	url   string
	token string
	done  chan error
}

func start(t *testing.T) *harness {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, w := io.Pipe()
	h := &harness{t: t, in: w, out: &lineSink{lines: make(chan string, 1000)}, dir: t.TempDir(),
		url: "ws://" + l.Addr().String() + "/ws", token: testToken, done: make(chan error, 1)}
	go func() {
		h.done <- Run(context.Background(), Config{Listener: l, Token: h.token, Dir: h.dir, In: r, Out: h.out})
	}()
	t.Cleanup(func() {
		w.Close()
		select {
		case err := <-h.done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after stdin closed")
		}
	})
	h.expect("listening on " + h.url + ", project dir " + h.dir)
	return h
}

func (h *harness) send(line string) {
	h.t.Helper()
	_, err := io.WriteString(h.in, line+"\n")
	require.NoError(h.t, err)
}

// line returns the next output line.
func (h *harness) line() string {
	h.t.Helper()
	select {
	case l := <-h.out.lines:
		return l
	case <-time.After(10 * time.Second):
		h.t.Fatal("no output line")
		return ""
	}
}

func (h *harness) expect(want string) {
	h.t.Helper()
	assert.Equal(h.t, want, h.line())
}

func (h *harness) connect(o extbridgetest.Options) *extbridgetest.Extension {
	h.t.Helper()
	o.Token = h.token
	ext, err := extbridgetest.Dial(context.Background(), h.url, &o)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { ext.Close() })
	h.expect("extension connected (version 1.9.2, origin " + extbridgetest.DefaultOrigin + ")")
	return ext
}

func TestBrowserCommands(t *testing.T) {
	h := start(t)
	h.send("navigate https://example.com/")
	assert.True(t, strings.HasPrefix(h.line(), "error: no browser extension connected on port "))

	b := extbridgetest.NewBrowser()
	b.SetPage("https://example.com/", extbridgetest.Page{Title: "Example Domain", Text: map[string]string{"": "Example Domain\nMore text", "p a": "More"}})
	b.OpenTab("https://docs.example/")
	h.connect(extbridgetest.Options{Browser: b})

	h.send("navigate https://example.com/")
	h.expect("https://example.com/ Example Domain")
	h.send("read")
	h.expect("Example Domain")
	h.expect("More text")
	h.send(`read "p a"`)
	h.expect("More")
	h.send("read #missing")
	h.expect("error: browser extension failed to read: no element matches selector #missing")
	h.send("click button.buy")
	h.expect("ok")
	h.send(`type "input[name=q]" warm socks`)
	h.expect("ok")
	assert.Equal(t, "warm socks", b.Value("input[name=q]"))
	assert.Empty(t, b.Enters())
	h.send(`type --enter "input[name=q]" wool socks`)
	h.expect("ok")
	assert.Equal(t, "wool socks", b.Value("input[name=q]"))
	assert.Equal(t, []string{"input[name=q]"}, b.Enters(), "type --enter presses Enter")
	h.send("tabs")
	h.expect("0 * Example Domain  https://example.com/")
	h.expect("1   Page https://docs.example/  https://docs.example/")
	h.send("navigate not-a-url")
	assert.Contains(t, h.line(), "error: extbridge: invalid navigate command: URL is not absolute")
	file := filepath.Join(h.dir, "shot.png")
	h.send("screenshot " + file)
	h.expect("wrote " + file + " (12 bytes, image/png)")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, b.Image(), data)
	h.send("frobnicate")
	h.expect(`error: unknown command "frobnicate" (try help)`)
	h.send("")
	h.send("help")
	assert.Equal(t, "commands:", h.line())
}

func TestApprovalsConcurrent(t *testing.T) {
	h := start(t)
	ext := h.connect(extbridgetest.Options{})
	_, err := ext.NextOfType(context.Background(), "mode")
	require.NoError(t, err)

	h.send(`approve? Bash {"command":"ls"}`)
	first := h.line()
	h.send(`approve? Write {"path":"x"}`)
	second := h.line()
	idOf := func(line string) string {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 2, line)
		return f[1]
	}
	firstID, secondID := idOf(first), idOf(second)
	assert.Contains(t, first, "pending: Bash")

	// Both requests reached the panel; both are pending at once.
	for range 2 {
		f, err := ext.NextOfType(context.Background(), "approval_request")
		require.NoError(t, err)
		var req struct {
			RequestID string `json:"request_id"`
			ToolArgs  string `json:"tool_args"`
		}
		require.NoError(t, f.Decode(&req))
		assert.Contains(t, []string{firstID, secondID}, req.RequestID)
	}
	// The panel approves the second; the terminal rejects the first.
	require.NoError(t, ext.Send(context.Background(), map[string]string{"type": "approval_response", "request_id": secondID, "action": "approve"}))
	h.expect("approved")
	h.send("reject " + firstID)
	h.expect("rejected")
	h.send("approve " + firstID)
	h.expect("error: no pending approval " + firstID)
	h.send("approve? Bash not-json")
	h.expect("error: approve?: ARGS_JSON is not valid JSON")
}

func TestPanelConversationsAndHistory(t *testing.T) {
	h := start(t)
	ext := h.connect(extbridgetest.Options{})
	ctx := context.Background()
	_, err := ext.NextOfType(ctx, "mode")
	require.NoError(t, err)

	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"new_session"}`)))
	h.expect("panel: new chat")
	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"user_message","content":"  find me socks  "}`)))
	h.expect("panel: find me socks")
	// The panel message gets a short reply turn, so the panel goes back to
	// idle: the user's message echoed, then the reply.
	turn := func(n int) (types []string, text string) {
		for len(types) < n {
			f, err := ext.NextOfType(ctx, "chat_event")
			require.NoError(t, err)
			var ev struct {
				Event struct {
					Type  string
					Delta string
				}
			}
			require.NoError(t, f.Decode(&ev))
			types = append(types, ev.Event.Type)
			text += ev.Event.Delta
		}
		return types, text
	}
	bracketed := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	message := []string{"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"}
	types, text := turn(8)
	assert.Equal(t, append(append(append([]string{"RUN_STARTED"}, message...), message...), "RUN_FINISHED"), types)
	assert.Equal(t, "find me socks"+panelReply, text)
	h.send("say Here are some socks.")
	h.expect("ok")
	types, text = turn(5)
	assert.Equal(t, bracketed, types)
	assert.Equal(t, "Here are some socks.", text)

	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"list_conversations"}`)))
	f, err := ext.NextOfType(ctx, "conversations")
	require.NoError(t, err)
	var convs struct {
		Conversations []struct {
			ID           string `json:"id"`
			Title        string `json:"title"`
			MessageCount int    `json:"message_count"`
		} `json:"conversations"`
	}
	require.NoError(t, f.Decode(&convs))
	require.Len(t, convs.Conversations, 1)
	assert.Equal(t, "find me socks", convs.Conversations[0].Title)
	assert.Equal(t, 3, convs.Conversations[0].MessageCount)

	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"resume_conversation","id":"`+convs.Conversations[0].ID+`"}`)))
	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"resume_conversation","id":"../../etc/passwd"}`)))
	f, err = ext.NextOfType(ctx, "conversation_snapshot")
	require.NoError(t, err)
	var snap struct{ Messages []Message }
	require.NoError(t, f.Decode(&snap))
	assert.Equal(t, []Message{{Role: "user", Content: "find me socks"}, {Role: "assistant", Content: panelReply},
		{Role: "assistant", Content: "Here are some socks."}}, snap.Messages)

	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"set_mode","mode":"plan"}`)))
	h.expect("mode: plan")
	require.NoError(t, ext.SendRaw(ctx, []byte(`{"type":"list_history"}`)))
	f, err = ext.NextOfType(ctx, "history")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"history","history":["find me socks"]}`, string(f.Raw))

	// The history persists in the folder.
	hist, err := extbridge.OpenInputHistory(filepath.Join(h.dir, "history.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, []string{"find me socks"}, hist.Entries())
}

// testToken is a token NewHub accepts (at least 16 bytes).
const testToken = "browserhub-test-token"

func TestResolveToken(t *testing.T) {
	tok, gen := ResolveToken("flag", "env")
	assert.Equal(t, "flag", tok)
	assert.False(t, gen)
	tok, gen = ResolveToken("", "env")
	assert.Equal(t, "env", tok)
	assert.False(t, gen)
	tok, gen = ResolveToken("", "")
	assert.True(t, gen)
	assert.Len(t, tok, 32)
}

func TestRunNeedsDirAndToken(t *testing.T) {
	assert.Error(t, Run(context.Background(), Config{Token: testToken}))
	assert.Error(t, Run(context.Background(), Config{Dir: t.TempDir(), Addr: "127.0.0.1:0"}))
}

// TestRunCancelledLeavesNoReader: after ctx ends, a line that still
// arrives on In does not strand the goroutine reading In.
func TestRunCancelledLeavesNoReader(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &lineSink{lines: make(chan string, 100)}
	go func() { done <- Run(ctx, Config{Listener: l, Token: testToken, Dir: t.TempDir(), In: r, Out: out}) }()
	assert.Contains(t, <-out.lines, "listening on")
	cancel()
	require.NoError(t, <-done)
	_, err = io.WriteString(w, "tabs\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.NoError(t, goleak.Find(), "the goroutine reading In has ended")
}

// The panel's "New chat" sends the user_message "/clear": a new
// conversation starts, and "/clear" is neither stored nor in the history.
func TestPanelNewChat(t *testing.T) {
	h := start(t)
	ext := h.connect(extbridgetest.Options{})
	ctx := context.Background()
	_, err := ext.NextOfType(ctx, "mode")
	require.NoError(t, err)
	require.NoError(t, ext.UserMessage(ctx, "first chat"))
	h.expect("panel: first chat")
	require.NoError(t, ext.NewChat(ctx))
	h.expect("panel: new chat")
	f, err := ext.NextOfType(ctx, "conversation_snapshot")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"conversation_snapshot","messages":[]}`, string(f.Raw))
	require.NoError(t, ext.UserMessage(ctx, "second chat"))
	h.expect("panel: second chat")

	f, err = ext.Request(ctx, "list_conversations", "conversations")
	require.NoError(t, err)
	var convs struct {
		Conversations []struct{ Title string } `json:"conversations"`
	}
	require.NoError(t, f.Decode(&convs))
	var titles []string
	for _, c := range convs.Conversations {
		titles = append(titles, c.Title)
	}
	assert.ElementsMatch(t, []string{"first chat", "second chat"}, titles)
	f, err = ext.Request(ctx, "list_history", "history")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"history","history":["first chat","second chat"]}`, string(f.Raw))
}

// Stdin's end withdraws a pending approval, and Run returns.
func TestStdinEOFWithApprovalPending(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r, w := io.Pipe()
	out := &lineSink{lines: make(chan string, 100)}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{Listener: l, Token: testToken, Dir: t.TempDir(), In: r, Out: out})
	}()
	assert.Contains(t, <-out.lines, "listening on")
	_, err = io.WriteString(w, `approve? Bash {"command":"ls"}`+"\n")
	require.NoError(t, err)
	assert.Contains(t, <-out.lines, "pending: Bash")
	require.NoError(t, w.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after stdin closed with an approval pending")
	}
	assert.Regexp(t, `^error: approval \S+: withdrawn: stdin closed$`, <-out.lines)
}

// An unanswered approval is withdrawn after ApprovalTimeout.
func TestApprovalTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := extbridgetest.NewListener()
		r, w := io.Pipe()
		out := &lineSink{lines: make(chan string, 100)}
		done := make(chan error, 1)
		go func() {
			done <- Run(context.Background(), Config{Listener: ln, Token: testToken, Dir: t.TempDir(), In: r, Out: out, ApprovalTimeout: time.Minute})
		}()
		assert.Contains(t, <-out.lines, "listening on")
		_, err := io.WriteString(w, `approve? Bash {}`+"\n")
		require.NoError(t, err)
		assert.Contains(t, <-out.lines, "pending: Bash")
		start := time.Now()
		assert.Regexp(t, `^error: approval \S+: no answer within 1m0s; withdrawn$`, <-out.lines)
		assert.Equal(t, time.Minute, time.Since(start))
		require.NoError(t, w.Close())
		require.NoError(t, <-done)
	})
}

// event decodes the AG-UI event of a frame of either dialect.
func event(t *testing.T, f extbridgetest.Frame) (ev struct {
	Type, Role, Delta, ThreadID, Name string
	RunID                             string `json:"runId"`
	Outcome                           struct{ Type string }
}) {
	t.Helper()
	require.NotNil(t, f.Event(), string(f.Raw))
	require.NoError(t, json.Unmarshal(f.Event(), &ev))
	return ev
}

// nextEvent returns the next AG-UI event of type typ, skipping other frames.
func nextEvent(t *testing.T, ext *extbridgetest.Extension, typ string) extbridgetest.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		f, err := ext.Next(ctx)
		require.NoError(t, err)
		if f.Event() != nil && event(t, f).Type == typ {
			return f
		}
	}
}

// TestProtocol2Panel drives browserhub from a protocol-2 panel: scoped
// lists for its --dir, the user's message echoed, work interrupted from the
// panel, the Echo tool approved in the panel, approve? as a suspended run.
func TestProtocol2Panel(t *testing.T) {
	h := start(t)
	approvals := make(chan *extbridgetest.ApprovalRequest, 4)
	ext := h.connect(extbridgetest.Options{Protocol: 2, ProjectDir: h.dir,
		Approvals: extbridgetest.ApprovalHandlerFunc(func(_ context.Context, req *extbridgetest.ApprovalRequest) string {
			approvals <- req
			return "approve"
		})})
	ctx := context.Background()
	assert.Equal(t, 2, ext.AckProtocol())

	require.NoError(t, ext.NewChat(ctx))
	h.expect("panel: new chat")
	nextEvent(t, ext, "MESSAGES_SNAPSHOT")
	require.NoError(t, ext.RunInput(ctx, "", "find me socks"))
	h.expect("panel: find me socks")
	started := event(t, nextEvent(t, ext, "RUN_STARTED"))
	require.NotEmpty(t, started.ThreadID)
	echo := event(t, nextEvent(t, ext, "TEXT_MESSAGE_START"))
	assert.Equal(t, "user", echo.Role)
	assert.Equal(t, "find me socks", event(t, nextEvent(t, ext, "TEXT_MESSAGE_CONTENT")).Delta)
	nextEvent(t, ext, "RUN_FINISHED")

	// The conversation the run named is the one the next message follows.
	require.NoError(t, ext.RunInput(ctx, started.ThreadID, "more socks"))
	h.expect("panel: more socks")
	assert.Equal(t, started.ThreadID, event(t, nextEvent(t, ext, "RUN_STARTED")).ThreadID)
	nextEvent(t, ext, "RUN_FINISHED")
	f, err := ext.Request(ctx, "list_conversations", "conversations")
	require.NoError(t, err)
	assert.Contains(t, string(f.Raw), started.ThreadID)

	// work runs until the panel stops it: RUN_FINISHED outcome cancelled.
	h.send("work 60")
	nextEvent(t, ext, "RUN_STARTED")
	nextEvent(t, ext, "TEXT_MESSAGE_END")
	require.NoError(t, ext.Interrupt(ctx))
	h.expect("panel: interrupt")
	h.expect("work: interrupted")
	assert.Equal(t, "cancelled", event(t, nextEvent(t, ext, "RUN_FINISHED")).Outcome.Type)

	// The panel's tool request reaches Echo after the panel's approval.
	res, err := ext.CallTool(ctx, "Echo", `{"text":"hi"}`)
	require.NoError(t, err)
	assert.Equal(t, &extbridgetest.ToolResultFrame{Type: "tool_result", ID: res.ID, Success: true, Output: "hi"}, res)
	assert.False(t, (<-approvals).Interrupt)
	assert.True(t, strings.HasPrefix(h.line(), "panel: tool request Echo"))
	res, err = ext.CallTool(ctx, "Nope", `{}`)
	require.NoError(t, err)
	assert.False(t, res.Success)

	// approve? is a tool call of a run on the active conversation, which
	// the panel resumes.
	h.send(`approve? Bash {"command":"ls"}`)
	assert.Contains(t, h.line(), "pending: Bash")
	req := <-approvals
	assert.True(t, req.Interrupt)
	assert.Equal(t, "Bash", req.ToolName)
	assert.Equal(t, `{"command":"ls"}`, req.ToolArgs)
	h.expect("approved")
	assert.Equal(t, started.ThreadID, ext.Thread())

	// A panel scoped to another project gets nothing from this one.
	other, err := extbridgetest.Dial(ctx, h.url, &extbridgetest.Options{Token: h.token, Protocol: 2, ProjectDir: "/elsewhere"})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	h.expect("extension disconnected")
	h.expect("extension connected (version 1.9.2, origin " + extbridgetest.DefaultOrigin + ")")
	f, err = other.Request(ctx, "list_conversations", "conversations")
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"conversations","conversations":[]}`, string(f.Raw))
	assert.Contains(t, h.line(), `project dir "/elsewhere" is not this hub's`)
}
