package agentproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/agentbridge/agentbridge/internal/safeprint"
	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Tool is one agent tool of the reference bridge: a name, a description
// for the model, and the JSON Schema of its arguments. Every adapter (the
// HTTP API's /v1/tools, an MCP server, an agent's own tool list) shares
// the definitions returned by [Tools], and runs them with [CallTool].
type Tool struct {
	// Name is the tool's name, such as "browser_click".
	Name string
	// Description tells a model what the tool does.
	Description string
	// InputSchema is the JSON Schema (type object) of the arguments.
	InputSchema json.RawMessage
}

// Tool names, in the order [Tools] lists them.
const (
	ToolSnapshot     = "browser_snapshot"
	ToolNavigate     = "browser_navigate"
	ToolClick        = "browser_click"
	ToolType         = "browser_type"
	ToolPress        = "browser_press"
	ToolScroll       = "browser_scroll"
	ToolScreenshot   = "browser_screenshot"
	ToolExtract      = "browser_extract"
	ToolSolveCaptcha = "browser_solve_captcha"
	ToolExecuteGoal  = "weboperator_execute_goal"
)

// TypeSolveCaptcha is the command browser_solve_captcha sends. The
// reference extension of this project does not implement it (it answers
// "Unknown bridge request: browser.solve_captcha").
const TypeSolveCaptcha = "browser.solve_captcha"

// Defaults of the tools, as the reference's.
const (
	// DefaultScrollAmount is browser_scroll's distance in pixels when
	// amount is missing or 0.
	DefaultScrollAmount = 500
	// DefaultGoalTimeout is how long weboperator_execute_goal lets a task
	// run when timeoutMs is missing or not positive.
	DefaultGoalTimeout = 120 * time.Second
	// MaxGoalTimeout caps weboperator_execute_goal's timeoutMs (the
	// reference has no cap).
	MaxGoalTimeout = time.Hour
	// DefaultToolTimeout bounds each command a tool sends when ctx has no
	// deadline (the reference's 30 s; browser_navigate gets
	// [DefaultNavigateToolTimeout]).
	DefaultToolTimeout = 30 * time.Second
	// DefaultNavigateToolTimeout bounds browser_navigate when ctx has no
	// deadline (the reference's 60 s).
	DefaultNavigateToolTimeout = 60 * time.Second
	// MaxToolArgumentsSize is the largest arguments document [CallTool]
	// accepts, in bytes: Chrome's 1 MiB limit on what reaches the
	// extension.
	MaxToolArgumentsSize = 1 << 20
	// goalWaitMargin is how much longer than the task's own wait the
	// tasks.wait command may take (the reference's MCP layer adds 10 s).
	goalWaitMargin = 10 * time.Second
)

// toolDefs is the catalogue: the reference's tools with the descriptions
// and argument schemas its MCP server publishes.
const toolDefs = `[
{"name":"browser_snapshot",
 "description":"Capture the structured accessibility tree and numbered interactive elements (buttons, inputs, links) from the current active browser tab.",
 "inputSchema":{"type":"object","properties":{},"additionalProperties":false}},
{"name":"browser_navigate",
 "description":"Navigate the active browser tab to a specified URL.",
 "inputSchema":{"type":"object","properties":{
   "url":{"type":"string","description":"The URL to navigate to (e.g. \"https://google.com\")."}},
  "required":["url"],"additionalProperties":false}},
{"name":"browser_click",
 "description":"Click an element on the webpage by its numeric index (from browser_snapshot) or CSS selector.",
 "inputSchema":{"type":"object","properties":{
   "index":{"type":"number","description":"The numeric index of the interactive element from the snapshot."},
   "selector":{"type":"string","description":"Alternative CSS selector of the element to click."}},
  "additionalProperties":false}},
{"name":"browser_type",
 "description":"Type text into an input field by element index or selector.",
 "inputSchema":{"type":"object","properties":{
   "index":{"type":"number","description":"The numeric index of the input element from the snapshot."},
   "selector":{"type":"string","description":"Alternative CSS selector of the input element."},
   "text":{"type":"string","description":"The text to type into the field."},
   "clear":{"type":"boolean","description":"Whether to clear existing text before typing (default: false)."}},
  "required":["text"],"additionalProperties":false}},
{"name":"browser_press",
 "description":"Press a keyboard key on the active webpage (e.g. \"Enter\", \"Tab\", \"Escape\", \"ArrowDown\", \"Backspace\").",
 "inputSchema":{"type":"object","properties":{
   "key":{"type":"string","description":"The key to press (e.g. \"Enter\", \"Tab\", \"Escape\")."}},
  "required":["key"],"additionalProperties":false}},
{"name":"browser_scroll",
 "description":"Scroll the active webpage up or down.",
 "inputSchema":{"type":"object","properties":{
   "direction":{"type":"string","enum":["down","up"],"description":"Direction to scroll (default: \"down\")."},
   "amount":{"type":"number","description":"Number of pixels to scroll (default: 500)."}},
  "additionalProperties":false}},
{"name":"browser_screenshot",
 "description":"Capture a visual PNG screenshot of the current active browser tab.",
 "inputSchema":{"type":"object","properties":{},"additionalProperties":false}},
{"name":"browser_extract",
 "description":"Extract text or structured data from the webpage according to an extraction instruction.",
 "inputSchema":{"type":"object","properties":{
   "instruction":{"type":"string","description":"Extraction guidance or prompt (e.g. \"Extract all product prices and titles\")."},
   "selector":{"type":"string","description":"Optional CSS selector to scope extraction."}},
  "additionalProperties":false}},
{"name":"browser_solve_captcha",
 "description":"Attempt to detect and automatically solve or click Cloudflare Turnstile, reCAPTCHA, or hCaptcha verification challenges in the active tab.",
 "inputSchema":{"type":"object","properties":{
   "type":{"type":"string","enum":["cloudflare","recaptcha","hcaptcha","auto"],"description":"Optional captcha type to target (default: auto)."}},
  "additionalProperties":false}},
{"name":"weboperator_execute_goal",
 "description":"Execute an autonomous browser goal end-to-end using WebOperator multi-step planner.",
 "inputSchema":{"type":"object","properties":{
   "goal":{"type":"string","description":"Natural language goal for the agent to achieve (e.g. \"Find cheapest flight from Paris to Rome on Kayak\")."},
   "timeoutMs":{"type":"number","description":"Maximum timeout in milliseconds (default: 120000)."}},
  "required":["goal"],"additionalProperties":false}}
]`

// compiledTool is a catalogue entry with its compiled schema.
type compiledTool struct {
	Tool
	schema *jsonschema.Schema
}

// catalogue parses and compiles toolDefs once.
var catalogue = sync.OnceValue(func() []compiledTool {
	var defs []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := strictjson.Unmarshal([]byte(toolDefs), &defs); err != nil {
		panic("agentproto: tool catalogue: " + err.Error())
	}
	out := make([]compiledTool, len(defs))
	for i, d := range defs {
		var compact bytes.Buffer
		if err := json.Compact(&compact, d.InputSchema); err != nil {
			panic("agentproto: tool catalogue: " + err.Error())
		}
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errors.New("no external schemas") }
		url := "agentproto:tool/" + d.Name
		if err := c.AddResource(url, bytes.NewReader(compact.Bytes())); err != nil {
			panic("agentproto: tool catalogue: " + err.Error())
		}
		out[i] = compiledTool{
			Tool:   Tool{Name: d.Name, Description: d.Description, InputSchema: compact.Bytes()},
			schema: c.MustCompile(url),
		}
	}
	return out
})

// Tools returns the tool catalogue in the reference's order: a fresh
// copy the caller may modify.
func Tools() []Tool {
	cat := catalogue()
	out := make([]Tool, len(cat))
	for i, t := range cat {
		out[i] = Tool{Name: t.Name, Description: t.Description, InputSchema: bytes.Clone(t.InputSchema)}
	}
	return out
}

func lookupTool(name string) (*compiledTool, bool) {
	cat := catalogue()
	for i := range cat {
		if cat[i].Name == name {
			return &cat[i], true
		}
	}
	return nil, false
}

// Caller sends one command of the agent protocol and decodes its result,
// as [Client.Call] does; *[Client] implements it, and [ExtensionCaller]
// adapts an [Extension].
type Caller interface {
	Call(ctx context.Context, typ string, payload any, result any) error
}

// ExtensionCaller returns a [Caller] that sends commands straight to ext,
// without a socket: what the HTTP API uses, and what a program that embeds
// a [Host] can use. Commands time out when ctx ends, or after
// [DefaultTimeout] when ctx has no deadline; errors are the extension's
// (a *[RemoteError] for the protocol's errors, so errors.Is works; a nil
// ext is never online). The caller never takes over ext's events.
func ExtensionCaller(ext Extension) Caller {
	return serverCaller{NewServer(&ServerOptions{Extension: eventless{ext}, AllowUnauthenticated: true})}
}

// eventless hides an [Extension]'s [EventSource], so that a [Server] made only to
// forward calls does not take its events from the real server; it keeps
// [Host]'s forgetting of timed-out calls.
type eventless struct{ ext Extension }

func (e eventless) Online() bool    { return e.ext != nil && e.ext.Online() }
func (e eventless) Forward(c *Call) { e.ext.Forward(c) }
func (e eventless) forget(c *Call) {
	if f, ok := e.ext.(forgetter); ok {
		f.forget(c)
	}
}

// serverCaller forwards commands through a server's extension, as the
// HTTP API does: no token, the server's in-flight accounting and closing.
type serverCaller struct{ srv *Server }

func (c serverCaller) Call(ctx context.Context, typ string, payload any, result any) error {
	raw, err := encodePayload(payload)
	if err != nil {
		return err
	}
	if len(raw) == 0 || raw[skipJSONSpace(raw)] != '{' {
		raw = emptyObject // as the socket server does
	}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
		if timeout < time.Millisecond {
			return ctxError(ctx, context.DeadlineExceeded)
		}
	}
	res, err := c.srv.call(ctx, typ, raw, timeout)
	if err != nil {
		if ctx.Err() != nil {
			return ctxError(ctx, err)
		}
		return err
	}
	if res == nil {
		res = nullResult
	}
	return decodeResult(res, nil, result)
}

// ErrUnknownTool is matched (errors.Is) by [CallTool]'s error for a name
// that is not in the catalogue; the error's message names the tool.
var ErrUnknownTool = errors.New("agentproto: unknown tool")

// ToolArgumentsError reports arguments that do not match the tool's
// schema. Nothing was sent to the extension.
type ToolArgumentsError struct {
	// Tool is the tool's name.
	Tool string
	// Path is the JSON Pointer of the offending value in the arguments
	// ("" for the arguments object itself).
	Path string
	// Message says what is wrong.
	Message string
}

func (e *ToolArgumentsError) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return "agentproto: invalid arguments for " + e.Tool + " at " + path + ": " + e.Message
}

// CallToolOptions configures [CallTool]. Nil means defaults.
type CallToolOptions struct {
	// Progress, if set, is called with short messages during long tools
	// (weboperator_execute_goal), from [CallTool]'s goroutine.
	Progress func(message string)
}

// ToolResult is the outcome of a tool.
type ToolResult struct {
	// Result is the command's result as the extension sent it; for
	// weboperator_execute_goal, the finished task's [GoalSummary].
	Result json.RawMessage
	// Text is what an adapter shows a model, as the reference's: a string
	// result as is, anything else as indented JSON (two spaces, as
	// json.Indent; containers nested deeper than 64 levels compact, cut
	// at 16 MiB with a line saying so). For a screenshot
	// decoded into Image it is a one-line description instead of the
	// megabytes of base64.
	Text string
	// Image is the screenshot a result carries (its dataUrl decoded), or
	// nil.
	Image *Image
}

// Image is a decoded image, such as a screenshot.
type Image struct {
	// MIMEType is the image's type from its data URL, such as
	// "image/jpeg" (what captureVisibleTab gives both WebOperator and this
	// project's reference extension) or "image/png". The reference's MCP
	// server calls every screenshot image/png; this is the real type.
	MIMEType string
	// Data is the image's bytes.
	Data []byte
}

// GoalSummary is weboperator_execute_goal's result: the reference's
// summary of the finished task for an agent.
type GoalSummary struct {
	// OK reports whether the task is done.
	OK bool `json:"ok"`
	// Status is the task's status when the wait ended.
	Status TaskStatus `json:"status"`
	// Goal is the task's goal.
	Goal string `json:"goal,omitempty"`
	// Answer is the answer of the task's done step, else the note of an
	// ok step, else the last extracted text, else its completed plan
	// steps, else a sentence about its status ("" while it still runs).
	Answer string `json:"answer"`
	// Extracted lists every step's extracted result, as sent.
	Extracted []json.RawMessage `json:"extracted,omitempty"`
	// StepCount is the number of the task's steps.
	StepCount int `json:"stepCount"`
	// Error is the task's error.
	Error string `json:"error,omitempty"`
	// ModelUsed is the model that ran the task.
	ModelUsed string `json:"modelUsed,omitempty"`
	// TaskID is the task's id (this project's addition, to follow up
	// with tasks.get or tasks.wait).
	TaskID string `json:"taskId,omitempty"`
}

// CallTool runs the tool name with args (a JSON object; nil or empty
// means {}) through c, as the reference's tool layer does.
//
// args are checked before anything is sent: strict JSON (no duplicate or
// case-variant keys), at most [MaxToolArgumentsSize] bytes, valid against
// the tool's schema; a failure is a *[ToolArgumentsError]. An unknown name
// is an error matching [ErrUnknownTool]. Errors from the bridge or the
// extension are returned as they are (*[RemoteError], errors matching
// [ErrTimeout], [ErrClosed], …).
//
// Arguments map to commands as in the reference: browser_scroll defaults
// to down by [DefaultScrollAmount] pixels (sent as both amount and
// amountPx, the field extensions read); browser_solve_captcha sends no type
// for "auto"; weboperator_execute_goal sends tasks.start, then tasks.wait
// for the task's timeoutMs (default [DefaultGoalTimeout]) and returns a
// [GoalSummary] of the task. When ctx has no deadline each command is
// bounded by [DefaultToolTimeout] ([DefaultNavigateToolTimeout] for
// browser_navigate; the wait by its timeoutMs plus 10 s).
func CallTool(ctx context.Context, c Caller, name string, args json.RawMessage, opts *CallToolOptions) (*ToolResult, error) {
	tool, ok := lookupTool(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	a, err := tool.validate(args)
	if err != nil {
		return nil, err
	}
	var progress func(string)
	if opts != nil {
		progress = opts.Progress
	}
	typ, payload := "", map[string]json.RawMessage{}
	switch name {
	case ToolSnapshot:
		typ = TypeSnapshot
	case ToolScreenshot:
		typ = TypeScreenshot
	case ToolNavigate:
		typ = TypeNavigate
		copyArgs(payload, a, "url")
	case ToolClick:
		typ = TypeClick
		copyArgs(payload, a, "index", "selector")
	case ToolType:
		typ = TypeType
		copyArgs(payload, a, "index", "selector", "text", "clear")
	case ToolPress:
		typ = TypePress
		copyArgs(payload, a, "key")
	case ToolScroll:
		typ = TypeScroll
		payload["direction"] = json.RawMessage(`"down"`)
		copyArgs(payload, a, "direction")
		amount := json.RawMessage(strconv.Itoa(DefaultScrollAmount))
		if n, ok := a["amount"]; ok && numberValue(n) != 0 {
			amount = n
		}
		payload["amount"], payload["amountPx"] = amount, amount
	case ToolExtract:
		typ = TypeExtract
		copyArgs(payload, a, "instruction", "selector")
	case ToolSolveCaptcha:
		typ = TypeSolveCaptcha
		if t, ok := a["type"]; ok && string(t) != `"auto"` {
			payload["type"] = t
		}
	case ToolExecuteGoal:
		return executeGoal(ctx, c, a, progress)
	}
	timeout := DefaultToolTimeout
	if typ == TypeNavigate {
		timeout = DefaultNavigateToolTimeout
	}
	var res json.RawMessage
	if err := callWithin(ctx, c, timeout, typ, orderedObject(payload), &res); err != nil {
		return nil, err
	}
	return newToolResult(res), nil
}

// callWithin makes one call, bounded by timeout when ctx has no deadline.
func callWithin(ctx context.Context, c Caller, timeout time.Duration, typ string, payload json.RawMessage, result *json.RawMessage) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := c.Call(ctx, typ, payload, result); err != nil {
		return err
	}
	if len(*result) == 0 {
		*result = json.RawMessage("null")
	}
	return nil
}

// validate checks args against the tool's schema and returns its members.
func (t *compiledTool) validate(args json.RawMessage) (map[string]json.RawMessage, error) {
	bad := func(path, msg string) error {
		return &ToolArgumentsError{Tool: t.Name, Path: path, Message: msg}
	}
	if len(args) > MaxToolArgumentsSize {
		return nil, bad("", "arguments exceed "+strconv.Itoa(MaxToolArgumentsSize)+" bytes")
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = emptyObject
	}
	if err := strictjson.Check(args); err != nil {
		var ke *strictjson.KeyError
		if errors.As(err, &ke) {
			return nil, bad(ke.Path, ke.Err.Error()+": "+strconv.Quote(ke.Key))
		}
		return nil, bad("", "not valid JSON: "+err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, bad("", "not valid JSON")
	}
	if err := t.schema.Validate(tree); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, bad("", "does not validate")
		}
		leaf := deepestCause(ve)
		return nil, bad(leaf.InstanceLocation, leaf.Message)
	}
	members := map[string]json.RawMessage{}
	if err := json.Unmarshal(args, &members); err != nil {
		return nil, bad("", "arguments must be an object")
	}
	return members, nil
}

// deepestCause returns the first leaf of a validation error's tree: the
// most specific failure.
func deepestCause(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

func copyArgs(dst, src map[string]json.RawMessage, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

// numberValue returns a JSON number's value (0 for anything else).
func numberValue(raw json.RawMessage) float64 {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		return 0
	}
	return f
}

// orderedObject encodes members with sorted keys (encoding/json's order
// for maps), values as given.
func orderedObject(members map[string]json.RawMessage) json.RawMessage {
	b, err := json.Marshal(members)
	if err != nil { // the values were validated as JSON
		return json.RawMessage(emptyObject)
	}
	return b
}

// newToolResult builds a tool's result from the command's raw result.
func newToolResult(res json.RawMessage) *ToolResult {
	tr := &ToolResult{Result: res}
	if img := resultImage(res); img != nil {
		tr.Image = img
		tr.Text = "Screenshot (" + img.MIMEType + ", " + strconv.Itoa(len(img.Data)) + " bytes)"
		return tr
	}
	tr.Text = resultText(res)
	return tr
}

// resultText is the reference's text of a result: a string as is,
// anything else as JSON indented by two spaces, within safeprint's limits
// (64 levels indented, 16 MiB), so that a deeply nested result cannot cost
// memory with the square of its depth.
func resultText(res json.RawMessage) string {
	if len(res) > 0 && res[0] == '"' {
		var s string
		if json.Unmarshal(res, &s) == nil {
			return s
		}
	}
	out, err := safeprint.IndentString(res, nil)
	if err != nil {
		return string(res)
	}
	return out
}

// resultImage decodes the image a result carries in dataUrl (what the
// extensions send) or dataUri or screenshot (what the reference's MCP
// server looks for), or returns nil.
func resultImage(res json.RawMessage) *Image {
	if len(res) == 0 || res[skipJSONSpace(res)] != '{' {
		return nil
	}
	// Most results carry no image: do not decode a large snapshot twice.
	if !bytes.Contains(res, []byte(`"dataUrl"`)) && !bytes.Contains(res, []byte(`"dataUri"`)) && !bytes.Contains(res, []byte(`"screenshot"`)) {
		return nil
	}
	var r struct {
		DataURL    *string `json:"dataUrl"`
		DataURI    *string `json:"dataUri"`
		Screenshot *string `json:"screenshot"`
	}
	if strictjson.Unmarshal(res, &r) != nil {
		return nil
	}
	var u *string
	for _, s := range []*string{r.DataURL, r.DataURI, r.Screenshot} {
		if s != nil && *s != "" {
			u = s
			break
		}
	}
	if u == nil {
		return nil
	}
	shot, err := DecodeDataURL(*u)
	if err != nil || !strings.HasPrefix(shot.MIMEType, "image/") {
		return nil
	}
	return &Image{MIMEType: shot.MIMEType, Data: shot.Data}
}

// executeGoal runs weboperator_execute_goal: tasks.start, tasks.wait, and
// the reference's summary of the task.
func executeGoal(ctx context.Context, c Caller, a map[string]json.RawMessage, progress func(string)) (*ToolResult, error) {
	if progress == nil {
		progress = func(string) {}
	}
	wait := DefaultGoalTimeout
	if n := numberValue(a["timeoutMs"]); n > 0 {
		wait = clampMillis(n, MaxGoalTimeout)
	}
	waitMs := json.RawMessage(strconv.FormatInt(wait.Milliseconds(), 10))
	start := orderedObject(map[string]json.RawMessage{"goal": a["goal"], "timeoutMs": waitMs})
	var started json.RawMessage
	if err := callWithin(ctx, c, DefaultToolTimeout, TypeTasksStart, start, &started); err != nil {
		return nil, err
	}
	var head struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(started, &head)
	id, ok := head.ID.(string)
	if !ok || id == "" {
		// As the reference: a start result without an id is returned as is.
		return newToolResult(started), nil
	}
	progress("Task " + id + " started; waiting up to " + wait.String() + " for it to finish")
	waitPayload := orderedObject(map[string]json.RawMessage{"id": mustString(id), "timeoutMs": waitMs})
	var final json.RawMessage
	if err := callWithin(ctx, c, wait+goalWaitMargin, TypeTasksWait, waitPayload, &final); err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(final)) == "null" {
		final = started
	}
	summary := summarizeTask(final)
	summary.TaskID = id
	progress("Task " + id + " is " + string(summary.Status))
	res, err := json.Marshal(summary)
	if err != nil {
		return nil, err
	}
	return &ToolResult{Result: res, Text: resultText(res)}, nil
}

// clampMillis converts a positive number of milliseconds to a duration of
// at most limit (comparing before converting: a float beyond int64 does
// not convert to a sensible duration).
func clampMillis(ms float64, limit time.Duration) time.Duration {
	if ms >= float64(limit/time.Millisecond) {
		return limit
	}
	return max(time.Duration(ms*float64(time.Millisecond)), time.Millisecond)
}

func mustString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// summarizeTask is the reference's summary of a finished task for an
// agent: the answer of its done step, else a step note, else what it
// extracted, else its completed plan steps, else its status.
func summarizeTask(raw json.RawMessage) *GoalSummary {
	var task struct {
		Goal      string     `json:"goal"`
		Status    TaskStatus `json:"status"`
		Error     string     `json:"error"`
		ModelUsed string     `json:"modelUsed"`
		Steps     []struct {
			Status   StepStatus `json:"status"`
			Note     string     `json:"note"`
			ToolCall *struct {
				Name      string                     `json:"name"`
				Arguments map[string]json.RawMessage `json:"arguments"`
			} `json:"toolCall"`
			Result *struct {
				Extracted json.RawMessage `json:"extracted"`
			} `json:"result"`
		} `json:"steps"`
		Plan *struct {
			Steps []struct {
				Status      string `json:"status"`
				Description string `json:"description"`
			} `json:"steps"`
		} `json:"plan"`
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" || json.Unmarshal(raw, &task) != nil {
		return &GoalSummary{Status: StatusFailed, Error: "Task not found or timed out"}
	}
	var answer string
	var extracted []json.RawMessage
	for _, step := range task.Steps {
		if tc := step.ToolCall; tc != nil && tc.Name == "done" {
			for _, k := range []string{"answer", "text", "note", "summary"} {
				if s := truthyText(tc.Arguments[k]); s != "" {
					answer = s
					break
				}
			}
		}
		if step.Result != nil && len(step.Result.Extracted) > 0 {
			extracted = append(extracted, step.Result.Extracted)
		}
		if answer == "" && step.Note != "" && step.Status == StepOK {
			answer = step.Note
		}
	}
	if answer == "" && len(extracted) > 0 {
		last := extracted[len(extracted)-1]
		var s string
		if json.Unmarshal(last, &s) == nil {
			answer = s
		} else {
			b, _ := json.Marshal(extracted)
			answer = resultText(b)
		}
	}
	if answer == "" && task.Plan != nil {
		var done []string
		for _, s := range task.Plan.Steps {
			if s.Status == "done" {
				done = append(done, "✓ "+s.Description)
			}
		}
		answer = strings.Join(done, "\n")
	}
	if answer == "" && task.Status == StatusDone {
		answer = fmt.Sprintf("Goal completed successfully: %q", task.Goal)
	} else if answer == "" && task.Status == StatusFailed {
		e := task.Error
		if e == "" {
			e = "Unknown error"
		}
		answer = "Goal failed: " + e
	}
	return &GoalSummary{
		OK: task.Status == StatusDone, Status: task.Status, Goal: task.Goal, Answer: answer,
		Extracted: extracted, StepCount: len(task.Steps), Error: task.Error, ModelUsed: task.ModelUsed,
	}
}

// truthyText is a done step's argument as the reference reads it: a
// non-empty string as is, any other truthy value as its JSON text.
func truthyText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null", string(raw) == "false", string(raw) == `""`:
		return ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case numberValue(raw) == 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')):
		return ""
	}
	return string(raw)
}
