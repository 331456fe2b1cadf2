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

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Tool is one agent tool of the reference bridge: a name, a description
// for the model, and the JSON Schema of its arguments. Every adapter (the
// HTTP API's /v1/tools, an MCP server, an agent's own tool list) shares
// the definitions returned by [Tools], and runs them with [CallTool].
type Tool struct {
	// Name is the tool's name, such as "browser_click".
	Name string
	// Title is a short name for people, such as "Click an element" (this
	// project's: the reference has none).
	Title string
	// Description tells a model what the tool does.
	Description string
	// InputSchema is the JSON Schema (type object) of the arguments.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema (type object) of the tool's
	// [ToolResult.Structured] (this project's: the reference has none).
	OutputSchema json.RawMessage
	// Annotations say what the tool may do, as MCP's tool annotations.
	Annotations ToolAnnotations
}

// ToolAnnotations are hints about a tool's effects, with the meanings of
// MCP's tool annotations; every field is meant as given (MCP's defaults
// for a missing hint do not apply).
type ToolAnnotations struct {
	// ReadOnly: the tool does not change the page or the browser.
	ReadOnly bool
	// Destructive: the tool may do what cannot be undone (submit a form,
	// delete something). Meaningful when ReadOnly is false.
	Destructive bool
	// Idempotent: repeating a call with the same arguments has no further
	// effect. Meaningful when ReadOnly is false.
	Idempotent bool
	// OpenWorld: the tool reaches web pages, an open world.
	OpenWorld bool
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

// CaptchaTypes are the captcha types browser_solve_captcha's schema lists,
// the newer reference's nine. [CallTool] forwards any other string as
// well: the extension decides what it can solve.
var CaptchaTypes = []string{"cloudflare", "recaptcha", "hcaptcha", "slider", "image", "audio", "press_and_hold", "pow", "auto"}

// Defaults of the tools, as the reference's.
const (
	// DefaultScrollAmount is browser_scroll's distance in pixels when
	// amount is missing or 0.
	DefaultScrollAmount = 500
	// DefaultGoalTimeout is how long weboperator_execute_goal lets a task
	// run when timeoutMs is missing or not positive.
	DefaultGoalTimeout = 120 * time.Second
	// DefaultMaxGoalTimeout caps weboperator_execute_goal's timeoutMs
	// unless CallToolOptions.MaxGoalTimeout says otherwise (the reference
	// has no cap).
	DefaultMaxGoalTimeout = time.Hour
	// DefaultToolTimeout bounds each command a tool sends when ctx has no
	// deadline (the reference's 30 s; browser_navigate gets
	// [DefaultNavigateToolTimeout]).
	DefaultToolTimeout = 30 * time.Second
	// DefaultNavigateToolTimeout bounds browser_navigate when ctx has no
	// deadline (the reference's 60 s).
	DefaultNavigateToolTimeout = 60 * time.Second
	// maxToolArgumentsSize is the largest arguments document [CallTool]
	// accepts, in bytes: Chrome's 1 MiB limit on what reaches the
	// extension (a fact of the link, not a tuning knob).
	maxToolArgumentsSize = 1 << 20
	// stopTaskTimeout bounds the best-effort tasks.stop that
	// weboperator_execute_goal sends when its call is cancelled after the
	// task started.
	stopTaskTimeout = 5 * time.Second
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
 "description":"Attempt to detect and automatically solve or click Cloudflare Turnstile, reCAPTCHA, hCaptcha, slider puzzle, or visual text challenges in the active tab.",
 "inputSchema":{"type":"object","properties":{
   "type":{"type":"string","enum":["cloudflare","recaptcha","hcaptcha","slider","image","audio","press_and_hold","pow","auto"],"description":"Optional captcha type to target (default: auto)."}},
  "additionalProperties":false}},
{"name":"weboperator_execute_goal",
 "description":"Execute an autonomous browser goal end-to-end using WebOperator multi-step planner.",
 "inputSchema":{"type":"object","properties":{
   "goal":{"type":"string","description":"Natural language goal for the agent to achieve (e.g. \"Find cheapest flight from Paris to Rome on Kayak\")."},
   "timeoutMs":{"type":"number","description":"Maximum timeout in milliseconds (default: 120000)."}},
  "required":["goal"],"additionalProperties":false}}
]`

// Output schemas of the tools' structured results.
const (
	// commandOutputSchema: {"result": …}, the extension's result as sent.
	commandOutputSchema = `{"type":"object","properties":{"result":{"description":"The extension's result, as it sent it."},` +
		`"omitted":{"type":"string","description":"Why result is null: it nests too deep for MCP's messages (the text has it)."}},"required":["result"]}`
	// screenshotOutputSchema: the result without its image data, and
	// what the image is (its bytes are the call's image content).
	screenshotOutputSchema = `{"type":"object","properties":{` +
		`"result":{"description":"The extension's result, without the image data (dataUrl, dataUri, screenshot)."},` +
		`"image":{"type":"object","description":"The image in the call's image content.","properties":{` +
		`"mimeType":{"type":"string"},"size":{"type":"integer","description":"The image's size in bytes."}},"required":["mimeType","size"]}},` +
		`"required":["result"]}`
	// goalOutputSchema is [GoalSummary]'s.
	goalOutputSchema = `{"type":"object","properties":{` +
		`"ok":{"type":"boolean","description":"Whether the task is done."},` +
		`"status":{"type":"string","description":"The task's status when the wait ended."},` +
		`"goal":{"type":"string"},` +
		`"answer":{"type":"string","description":"The answer of the task's done step, else a step note, what it extracted, its completed plan steps, or a sentence about its status."},` +
		`"extracted":{"type":"array","description":"Every step's extracted result, as sent."},` +
		`"stepCount":{"type":"integer"},` +
		`"error":{"type":"string"},` +
		`"modelUsed":{"type":"string"},` +
		`"taskId":{"type":"string","description":"The task's id, for tasks.get or tasks.wait."}},` +
		`"required":["ok","status","answer","stepCount"]}`
)

// toolExtras are what this project adds to the reference's catalogue:
// titles, annotations and output schemas.
var toolExtras = map[string]struct {
	title  string
	ann    ToolAnnotations
	output string
}{
	ToolSnapshot:     {"Snapshot the page", ToolAnnotations{ReadOnly: true, OpenWorld: true}, commandOutputSchema},
	ToolNavigate:     {"Navigate to a URL", ToolAnnotations{Idempotent: true, OpenWorld: true}, commandOutputSchema},
	ToolClick:        {"Click an element", ToolAnnotations{Destructive: true, OpenWorld: true}, commandOutputSchema},
	ToolType:         {"Type into a field", ToolAnnotations{OpenWorld: true}, commandOutputSchema},
	ToolPress:        {"Press a key", ToolAnnotations{Destructive: true, OpenWorld: true}, commandOutputSchema},
	ToolScroll:       {"Scroll the page", ToolAnnotations{OpenWorld: true}, commandOutputSchema},
	ToolScreenshot:   {"Screenshot the page", ToolAnnotations{ReadOnly: true, OpenWorld: true}, screenshotOutputSchema},
	ToolExtract:      {"Extract from the page", ToolAnnotations{ReadOnly: true, OpenWorld: true}, commandOutputSchema},
	ToolSolveCaptcha: {"Solve a captcha", ToolAnnotations{OpenWorld: true}, commandOutputSchema},
	ToolExecuteGoal:  {"Run a browser goal", ToolAnnotations{Destructive: true, OpenWorld: true}, goalOutputSchema},
}

// validationSchemas replace a published input schema where [CallTool]
// accepts more: browser_solve_captcha forwards a type it does not list.
var validationSchemas = map[string]string{
	ToolSolveCaptcha: `{"type":"object","properties":{"type":{"type":"string"}},"additionalProperties":false}`,
}

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
		validation := compact.Bytes()
		if v, ok := validationSchemas[d.Name]; ok {
			validation = []byte(v)
		}
		extra, ok := toolExtras[d.Name]
		if !ok {
			panic("agentproto: tool catalogue: no title for " + d.Name)
		}
		out[i] = compiledTool{
			Tool: Tool{Name: d.Name, Title: extra.title, Description: d.Description, InputSchema: compact.Bytes(),
				OutputSchema: json.RawMessage(extra.output), Annotations: extra.ann},
			schema: compileSchema("agentproto:tool/"+d.Name, validation),
		}
	}
	return out
})

// compileSchema compiles a catalogue's schema (draft 2020-12, no external
// references).
func compileSchema(url string, schema []byte) *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errors.New("no external schemas") }
	if err := c.AddResource(url, bytes.NewReader(schema)); err != nil {
		panic("agentproto: tool catalogue: " + err.Error())
	}
	return c.MustCompile(url)
}

// Tools returns the tool catalogue in the reference's order: a fresh
// copy the caller may modify.
func Tools() []Tool {
	cat := catalogue()
	out := make([]Tool, len(cat))
	for i, t := range cat {
		out[i] = t.Tool
		out[i].InputSchema = bytes.Clone(t.InputSchema)
		out[i].OutputSchema = bytes.Clone(t.OutputSchema)
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
	return decodeResult(typ, res, nil, result)
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
	// Progress, if set, is called during weboperator_execute_goal, from
	// [CallTool]'s goroutine: once when the task started (Done 0), then
	// once per step the task finished, when c also carries the
	// extension's events ([EventCaller]).
	Progress func(ToolProgress)
	// MaxGoalTimeout caps weboperator_execute_goal's timeoutMs (a model
	// may ask for any). Zero means [DefaultMaxGoalTimeout].
	MaxGoalTimeout time.Duration
}

// ToolProgress is one progress report of a long tool.
type ToolProgress struct {
	// Done counts what is finished (a task's steps); it grows with each
	// report.
	Done int
	// Total is how many there will be when known (the steps of the task's
	// plan), else 0. It may grow when the plan does.
	Total int
	// Message says what happened, such as "Step 2 (click): ok".
	Message string
}

// EventCaller is a [Caller] whose connection also carries the extension's
// events, such as *[Client]: [CallTool] follows a goal's steps through it
// for [CallToolOptions].Progress. Subscribe may return nil when there is
// no connection.
type EventCaller interface {
	Caller
	Subscribe(opts *SubscribeOptions) *Subscription
}

// ToolResult is the outcome of a tool.
type ToolResult struct {
	// Result is the command's result as the extension sent it; for
	// weboperator_execute_goal, the finished task's [GoalSummary].
	Result json.RawMessage
	// Text is what an adapter shows a model: byte for byte the text of
	// the reference MCP server (mcp-server.js), which reads the result as
	// JavaScript does. browser_navigate: "Navigated to <url>. Current
	// title: <title>"; browser_click: "Clicked element. <status>";
	// browser_type: `Typed into element: "<text>". <status>`;
	// browser_press: `Pressed key "<key>". <status>`; browser_scroll:
	// "Scrolled <direction>. <status>" (status is the result's, else
	// "ok"); browser_extract and browser_solve_captcha: a string result as
	// is; weboperator_execute_goal: the summary's answer, else the summary
	// as JSON; anything else JSON.stringify(result, null, 2). JSON is
	// written as JavaScript writes it (its number forms, escapes and
	// member order), with two limits: containers nested deeper than 64
	// levels are compact, and the text stops at 16 MiB with a line saying
	// so. For a screenshot decoded into Image it is a one-line description
	// instead of the megabytes of base64 (the reference returns the image
	// alone, and so do MCP adapters).
	Text string
	// Structured is the result as a JSON object valid against the tool's
	// [Tool.OutputSchema]: {"result": <Result>}; for a screenshot the
	// result without its image data, and {"mimeType", "size"} of Image
	// under "image"; for weboperator_execute_goal the [GoalSummary].
	Structured json.RawMessage
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
// case-variant keys), at most 1 MiB, valid against
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
	var progress func(ToolProgress)
	maxGoal := DefaultMaxGoalTimeout
	if opts != nil {
		progress = opts.Progress
		if opts.MaxGoalTimeout > 0 {
			maxGoal = opts.MaxGoalTimeout
		}
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
		typ = TypeText
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
		return executeGoal(ctx, c, a, maxGoal, progress)
	}
	timeout := DefaultToolTimeout
	if typ == TypeNavigate {
		timeout = DefaultNavigateToolTimeout
	}
	var res json.RawMessage
	if err := callWithin(ctx, c, timeout, typ, orderedObject(payload), &res); err != nil {
		return nil, err
	}
	return newToolResult(name, a, res), nil
}

// commandText is the reference's text of the result res of tool name
// called with the arguments a.
func commandText(name string, a map[string]json.RawMessage, res json.RawMessage) string {
	r := jsValue(res)
	status := func() string { return r.get("status").or(jsString("ok")).String() }
	switch name {
	case ToolNavigate:
		return "Navigated to " + jsValue(a["url"]).String() + ". Current title: " + r.get("title").or(jsString("")).String()
	case ToolClick:
		return "Clicked element. " + status()
	case ToolType:
		return `Typed into element: "` + jsValue(a["text"]).String() + `". ` + status()
	case ToolPress:
		return `Pressed key "` + jsValue(a["key"]).String() + `". ` + status()
	case ToolScroll:
		return "Scrolled " + jsValue(a["direction"]).or(jsString("down")).String() + ". " + status()
	case ToolExtract, ToolSolveCaptcha:
		if s, ok := r.isString(); ok {
			return s
		}
	}
	return jsStringify(res)
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
	if len(args) > maxToolArgumentsSize {
		return nil, bad("", "arguments exceed "+strconv.Itoa(maxToolArgumentsSize)+" bytes")
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

// newToolResult builds the result of tool name, called with the arguments
// a, from the command's raw result.
func newToolResult(name string, a map[string]json.RawMessage, res json.RawMessage) *ToolResult {
	if img := resultImage(res); img != nil {
		return &ToolResult{Result: res, Image: img, Structured: screenshotStructured(res, img),
			Text: "Screenshot (" + img.MIMEType + ", " + strconv.Itoa(len(img.Data)) + " bytes)"}
	}
	return &ToolResult{Result: res, Text: commandText(name, a, res), Structured: wrapResult(res)}
}

// maxStructuredDepth is the deepest result [ToolResult.Structured]
// carries: the go-sdk (as encoding/json) refuses JSON-RPC messages nested
// deeper than 1,000 levels, and the message holds the result 4 levels down.
// A deeper result is {"result": null, "omitted": "…"}; Text has it.
const maxStructuredDepth = 990

// wrapResult is {"result": res}.
func wrapResult(res json.RawMessage) json.RawMessage {
	if jsonDepth(res) > maxStructuredDepth {
		return json.RawMessage(`{"result":null,"omitted":"the result nests deeper than ` + strconv.Itoa(maxStructuredDepth) + ` levels: the text has it"}`)
	}
	return append(append([]byte(`{"result":`), bytes.TrimSpace(res)...), '}')
}

// jsonDepth is how deep the valid JSON text b nests its containers.
func jsonDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// screenshotStructured is a screenshot's structured result: the result
// without the members that held the image, and what the image is.
func screenshotStructured(res json.RawMessage, img *Image) json.RawMessage {
	var members map[string]json.RawMessage
	_ = json.Unmarshal(res, &members) // an object: resultImage decoded it
	for _, k := range []string{"dataUrl", "dataUri", "screenshot"} {
		delete(members, k)
	}
	b, err := json.Marshal(struct {
		Result map[string]json.RawMessage `json:"result"`
		Image  struct {
			MIMEType string `json:"mimeType"`
			Size     int    `json:"size"`
		} `json:"image"`
	}{Result: members, Image: struct {
		MIMEType string `json:"mimeType"`
		Size     int    `json:"size"`
	}{img.MIMEType, len(img.Data)}})
	if err != nil {
		return wrapResult(json.RawMessage("null"))
	}
	return b
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
// the reference's summary of the task. A call cancelled once the task
// started stops it (tasks.stop).
func executeGoal(ctx context.Context, c Caller, a map[string]json.RawMessage, maxWait time.Duration, progress func(ToolProgress)) (*ToolResult, error) {
	if progress == nil {
		progress = func(ToolProgress) {}
	}
	wait := DefaultGoalTimeout
	if n := numberValue(a["timeoutMs"]); n > 0 {
		wait = clampMillis(n, maxWait)
	}
	waitMs := json.RawMessage(strconv.FormatInt(wait.Milliseconds(), 10))
	start := orderedObject(map[string]json.RawMessage{"goal": a["goal"], "timeoutMs": waitMs})
	// tasks.start runs to its answer even when ctx is cancelled meanwhile,
	// so that the task it may have started is known, and stopped.
	startCtx := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		startCtx, cancel = context.WithDeadline(startCtx, deadline)
		defer cancel()
	}
	var started json.RawMessage
	if err := callWithin(startCtx, c, DefaultToolTimeout, TypeTasksStart, start, &started); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	// As the reference: any truthy id is waited for; without one the start
	// result is the task.
	id := jsValue(started).get("id")
	if !id.truthy() {
		return goalResult(jsValue(started), ""), nil
	}
	idText, _ := id.isString()
	if ctx.Err() != nil {
		stopTask(ctx, c, id)
		return nil, ctx.Err()
	}
	progress(ToolProgress{Message: "Task " + id.String() + " started; waiting up to " + wait.String() + " for it to finish"})
	waitPayload := orderedObject(map[string]json.RawMessage{"id": json.RawMessage(id), "timeoutMs": waitMs})
	steps := &stepCounter{task: idText, seen: map[string]bool{}}
	final, err := waitTask(ctx, c, wait+goalWaitMargin, waitPayload, steps, progress)
	if err != nil {
		if ctx.Err() != nil {
			stopTask(ctx, c, id)
			return nil, ctx.Err()
		}
		return nil, err
	}
	task := jsValue(final)
	if !task.truthy() {
		task = jsValue(started) // finalTask || startRes
	}
	res := goalResult(task, idText)
	if n, _ := task.get("steps").items(); len(n) > steps.done {
		// Steps the events did not show (none without an EventCaller):
		// the last report counts them all.
		progress(ToolProgress{Done: len(n), Total: len(n), Message: "Task " + id.String() + " is " + task.get("status").String()})
	}
	return res, nil
}

// stopTask sends tasks.stop for the task id of a call whose ctx ended,
// within stopTaskTimeout; its outcome changes nothing for the caller.
func stopTask(ctx context.Context, c Caller, id jsValue) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTaskTimeout)
	defer cancel()
	var res json.RawMessage
	_ = c.Call(stopCtx, TypeTasksStop, orderedObject(map[string]json.RawMessage{"id": json.RawMessage(id)}), &res)
}

// waitTask sends tasks.wait and, when c carries events, reports each step
// of the task that finishes meanwhile.
func waitTask(ctx context.Context, c Caller, timeout time.Duration, payload json.RawMessage, steps *stepCounter, progress func(ToolProgress)) (json.RawMessage, error) {
	var sub *Subscription
	if ec, ok := c.(EventCaller); ok && steps.task != "" {
		sub = ec.Subscribe(nil)
	}
	if sub == nil {
		var final json.RawMessage
		err := callWithin(ctx, c, timeout, TypeTasksWait, payload, &final)
		return final, err
	}
	defer sub.Close()
	type outcome struct {
		final json.RawMessage
		err   error
	}
	waited := make(chan outcome, 1)
	go func() {
		var o outcome
		o.err = callWithin(ctx, c, timeout, TypeTasksWait, payload, &o.final)
		waited <- o
	}()
	events := sub.Events()
	for {
		select {
		case o := <-waited:
			// Events sent before the answer are already buffered.
			for events != nil {
				select {
				case e, ok := <-events:
					if !ok {
						events = nil
					} else if p, ok := steps.observe(e); ok {
						progress(p)
					}
				default:
					events = nil
				}
			}
			return o.final, o.err
		case e, ok := <-events:
			if !ok {
				events = nil // the connection ended: the wait says how
				continue
			}
			if p, ok := steps.observe(e); ok {
				progress(p)
			}
		}
	}
}

// stepCounter turns a task's events into one progress report per finished
// step, with the plan's length as the total when known.
type stepCounter struct {
	task  string
	seen  map[string]bool
	done  int
	total int
}

func (s *stepCounter) observe(e Event) (ToolProgress, bool) {
	if e.TaskID() != s.task {
		return ToolProgress{}, false
	}
	v, err := e.Decode()
	if err != nil {
		return ToolProgress{}, false
	}
	switch ev := v.(type) {
	case *TaskUpdateEvent:
		var plan struct {
			Steps []json.RawMessage `json:"steps"`
		}
		if json.Unmarshal(ev.Task.Plan, &plan) == nil {
			s.total = max(s.total, len(plan.Steps))
		}
	case *TaskStepEvent:
		st := ev.Step.Status
		key := ev.Step.ID + "#" + strconv.Itoa(ev.Step.Index)
		if (st != StepOK && st != StepFail && st != StepSkipped) || s.seen[key] {
			return ToolProgress{}, false
		}
		s.seen[key] = true
		s.done++
		what := "step"
		if ev.Step.ToolCall != nil && ev.Step.ToolCall.Name != "" {
			what = ev.Step.ToolCall.Name
		}
		total := s.total
		if total < s.done {
			total = 0 // the plan is shorter than the steps taken: unknown
		}
		return ToolProgress{Done: s.done, Total: total, Message: "Step " + strconv.Itoa(s.done) + " (" + what + "): " + string(st)}, true
	}
	return ToolProgress{}, false
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

// goalResult is weboperator_execute_goal's result for task, the value of
// tasks.wait (or tasks.start) as the reference reads it.
func goalResult(task jsValue, id string) *ToolResult {
	summary, text := summarizeTask(task)
	summary.TaskID = id
	res, err := json.Marshal(summary)
	if err != nil { // a GoalSummary always marshals
		res = []byte(`{}`)
	}
	return &ToolResult{Result: res, Text: text, Structured: res}
}

// summarizeTask is the reference's formatTaskResultForAgent: the summary
// of a task for an agent (the answer of its done step, else a step note,
// else what it extracted, else its completed plan steps, else its status),
// and the reference's text of it: the answer, else the summary as JSON.
func summarizeTask(task jsValue) (*GoalSummary, string) {
	if !task.truthy() {
		const notFound = "Task not found or timed out"
		return &GoalSummary{Status: StatusFailed, Error: notFound},
			jsStringify(json.RawMessage(`{"ok":false,"status":"failed","error":"` + notFound + `"}`))
	}
	t := task.object() // each object decoded once: a task may be large
	steps, _ := t.get("steps").items()
	var answer jsValue
	// extracted is the reference's list (an extract step's result twice),
	// for the text; perStep each step's once, for the summary.
	var extracted, perStep []jsValue
	for _, stepValue := range steps {
		step := stepValue.object()
		result := step.get("result")
		r := result.object()
		if tcValue := step.get("toolCall"); tcValue.truthy() {
			tc := tcValue.object()
			args := tc.get("arguments").or(jsValue("{}")).object()
			name, _ := tc.get("name").isString()
			if name == "done" {
				if v := args.get("answer").or(args.get("text")).or(args.get("note")).or(args.get("summary")); v.truthy() {
					answer = jsString(v.String())
				}
			}
			// The reference lists an extract step's result twice.
			if name == "extract" && args.get("instruction").truthy() && result.truthy() && r.get("extracted").truthy() {
				extracted = append(extracted, r.get("extracted"))
			}
		}
		if result.truthy() && !r.get("extracted").undefined() {
			extracted = append(extracted, r.get("extracted"))
			perStep = append(perStep, r.get("extracted"))
		}
		if status, _ := step.get("status").isString(); !answer.truthy() && step.get("note").truthy() && status == "ok" {
			answer = step.get("note")
		}
	}
	if !answer.truthy() && len(extracted) > 0 {
		if _, ok := extracted[len(extracted)-1].isString(); ok {
			answer = extracted[len(extracted)-1]
		} else {
			answer = jsString(jsStringify(jsArray(extracted)))
		}
	}
	if plan := t.get("plan"); !answer.truthy() && plan.truthy() {
		if planSteps, ok := plan.object().get("steps").items(); ok {
			var done []string
			for _, planStep := range planSteps {
				ps := planStep.object()
				if st, _ := ps.get("status").isString(); st == "done" {
					done = append(done, "✓ "+ps.get("description").String())
				}
			}
			if len(done) > 0 {
				answer = jsString(strings.Join(done, "\n"))
			}
		}
	}
	status, _ := t.get("status").isString()
	if !answer.truthy() && status == "done" {
		answer = jsString(`Goal completed successfully: "` + t.get("goal").String() + `"`)
	} else if !answer.truthy() && status == "failed" {
		answer = jsString("Goal failed: " + t.get("error").or(jsString("Unknown error")).String())
	}
	if !answer.truthy() {
		answer = jsString("")
	}

	summary := &GoalSummary{OK: status == "done", Status: TaskStatus(status), Answer: answer.String(), StepCount: len(steps)}
	summary.Goal, _ = t.get("goal").isString()
	summary.Error, _ = t.get("error").isString()
	summary.ModelUsed, _ = t.get("modelUsed").isString()
	for _, e := range perStep {
		summary.Extracted = append(summary.Extracted, json.RawMessage(e))
	}
	if answer.truthy() {
		return summary, summary.Answer
	}
	// The reference's formatted object, its undefined members left out.
	var b bytes.Buffer
	b.WriteString(`{"ok":` + strconv.FormatBool(summary.OK))
	member := func(key string, v jsValue) {
		if !v.undefined() {
			b.WriteString(`,"` + key + `":`)
			b.Write(bytes.TrimSpace(v))
		}
	}
	member("status", t.get("status"))
	member("goal", t.get("goal"))
	member("answer", answer)
	if len(extracted) > 0 {
		member("extracted", jsValue(jsArray(extracted)))
	}
	member("stepCount", jsValue(strconv.Itoa(len(steps))))
	member("error", t.get("error"))
	member("modelUsed", t.get("modelUsed"))
	b.WriteByte('}')
	return summary, jsStringify(b.Bytes())
}

// jsArray is the JSON array of items.
func jsArray(items []jsValue) json.RawMessage {
	b := []byte{'['}
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, bytes.TrimSpace(it)...)
	}
	return append(b, ']')
}
