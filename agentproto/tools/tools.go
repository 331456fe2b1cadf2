package tools

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

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Tool is one agent tool of the reference bridge: a name, a description
// for the model, and the JSON Schema of its arguments. Every adapter (the
// HTTP API's /v1/tools, an MCP server, an agent's own tool list) shares
// the definitions returned by [List], and runs them with [Call].
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
	// [Result.Structured] (this project's: the reference has none).
	OutputSchema json.RawMessage
	// Annotations say what the tool may do, as MCP's tool annotations.
	Annotations Annotations
}

// Annotations are hints about a tool's effects, with the meanings of
// MCP's tool annotations; every field is meant as given (MCP's defaults
// for a missing hint do not apply).
type Annotations struct {
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

// Tool names, in the order [List] lists them.
const (
	BrowserSnapshot     = "browser_snapshot"
	BrowserNavigate     = "browser_navigate"
	BrowserClick        = "browser_click"
	BrowserType         = "browser_type"
	BrowserPress        = "browser_press"
	BrowserScroll       = "browser_scroll"
	BrowserScreenshot   = "browser_screenshot"
	BrowserExtract      = "browser_extract"
	BrowserSolveCaptcha = "browser_solve_captcha"
	ExecuteGoal         = "weboperator_execute_goal"
)

// TypeSolveCaptcha is the command browser_solve_captcha sends. The
// reference extension of this project does not implement it (it answers
// "Unknown bridge request: browser.solve_captcha").
const TypeSolveCaptcha = "browser.solve_captcha"

// CaptchaTypes are the captcha types browser_solve_captcha's schema lists,
// the newer reference's nine. [Call] forwards any other string as
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
	// unless [CallOptions].MaxGoalTimeout says otherwise (the reference
	// has no cap).
	DefaultMaxGoalTimeout = time.Hour
	// DefaultTimeout bounds each command a tool sends when ctx has no
	// deadline (the reference's 30 s; browser_navigate gets
	// [DefaultNavigateTimeout]).
	DefaultTimeout = 30 * time.Second
	// DefaultNavigateTimeout bounds browser_navigate when ctx has no
	// deadline (the reference's 60 s).
	DefaultNavigateTimeout = 60 * time.Second
	// maxArgumentsSize is the largest arguments document [Call]
	// accepts, in bytes: Chrome's 1 MiB limit on what reaches the
	// extension (a fact of the link, not a tuning knob).
	maxArgumentsSize = 1 << 20
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
	ann    Annotations
	output string
}{
	BrowserSnapshot:     {"Snapshot the page", Annotations{ReadOnly: true, OpenWorld: true}, commandOutputSchema},
	BrowserNavigate:     {"Navigate to a URL", Annotations{Idempotent: true, OpenWorld: true}, commandOutputSchema},
	BrowserClick:        {"Click an element", Annotations{Destructive: true, OpenWorld: true}, commandOutputSchema},
	BrowserType:         {"Type into a field", Annotations{OpenWorld: true}, commandOutputSchema},
	BrowserPress:        {"Press a key", Annotations{Destructive: true, OpenWorld: true}, commandOutputSchema},
	BrowserScroll:       {"Scroll the page", Annotations{OpenWorld: true}, commandOutputSchema},
	BrowserScreenshot:   {"Screenshot the page", Annotations{ReadOnly: true, OpenWorld: true}, screenshotOutputSchema},
	BrowserExtract:      {"Extract from the page", Annotations{ReadOnly: true, OpenWorld: true}, commandOutputSchema},
	BrowserSolveCaptcha: {"Solve a captcha", Annotations{OpenWorld: true}, commandOutputSchema},
	ExecuteGoal:         {"Run a browser goal", Annotations{Destructive: true, OpenWorld: true}, goalOutputSchema},
}

// validationSchemas replace a published input schema where [Call]
// accepts more: browser_solve_captcha forwards a type it does not list.
var validationSchemas = map[string]string{
	BrowserSolveCaptcha: `{"type":"object","properties":{"type":{"type":"string"}},"additionalProperties":false}`,
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
		panic("tools: tool catalogue: " + err.Error())
	}
	out := make([]compiledTool, len(defs))
	for i, d := range defs {
		var compact bytes.Buffer
		if err := json.Compact(&compact, d.InputSchema); err != nil {
			panic("tools: tool catalogue: " + err.Error())
		}
		validation := compact.Bytes()
		if v, ok := validationSchemas[d.Name]; ok {
			validation = []byte(v)
		}
		extra, ok := toolExtras[d.Name]
		if !ok {
			panic("tools: tool catalogue: no title for " + d.Name)
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
		panic("tools: tool catalogue: " + err.Error())
	}
	return c.MustCompile(url)
}

// List returns the tool catalogue in the reference's order: a fresh
// copy the caller may modify.
func List() []Tool {
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

// ErrUnknown is matched (errors.Is) by [Call]'s error for a name
// that is not in the catalogue; the error's message names the tool.
var ErrUnknown = errors.New("tools: unknown tool")

// ArgumentsError reports arguments that do not match the tool's
// schema. Nothing was sent to the extension.
type ArgumentsError struct {
	// Tool is the tool's name.
	Tool string
	// Path is the JSON Pointer of the offending value in the arguments
	// ("" for the arguments object itself).
	Path string
	// Message says what is wrong.
	Message string
}

func (e *ArgumentsError) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return "tools: invalid arguments for " + e.Tool + " at " + path + ": " + e.Message
}

// CallOptions configures [Call]. Nil means defaults.
type CallOptions struct {
	// Progress, if set, is called during weboperator_execute_goal, from
	// [Call]'s goroutine: once when the task started (Done 0), then
	// once per step the task finished, when c also carries the
	// extension's events ([agentproto.EventCaller]).
	Progress func(Progress)
	// MaxGoalTimeout caps weboperator_execute_goal's timeoutMs (a model
	// may ask for any). Zero means [DefaultMaxGoalTimeout].
	MaxGoalTimeout time.Duration
}

// Progress is one progress report of a long tool.
type Progress struct {
	// Done counts what is finished (a task's steps); it grows with each
	// report.
	Done int
	// Total is how many there will be when known (the steps of the task's
	// plan), else 0. It may grow when the plan does.
	Total int
	// Message says what happened, such as "Step 2 (click): ok".
	Message string
}

// Result is the outcome of a tool.
type Result struct {
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
	Status agentproto.TaskStatus `json:"status"`
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

// Call runs the tool name with args (a JSON object; nil or empty
// means {}) through c, as the reference's tool layer does.
//
// args are checked before anything is sent: strict JSON (no duplicate or
// case-variant keys), at most 1 MiB, valid against
// the tool's schema; a failure is a *[ArgumentsError]. An unknown name
// is an error matching [ErrUnknown]. Errors from the bridge or the
// extension are returned as they are (*[agentproto.RemoteError], errors matching
// [agentproto.ErrTimeout], [agentproto.ErrClosed], …).
//
// Arguments map to commands as in the reference: browser_scroll defaults
// to down by [DefaultScrollAmount] pixels (sent as both amount and
// amountPx, the field extensions read); browser_solve_captcha sends no type
// for "auto"; weboperator_execute_goal sends tasks.start, then tasks.wait
// for the task's timeoutMs (default [DefaultGoalTimeout]) and returns a
// [GoalSummary] of the task. When ctx has no deadline each command is
// bounded by [DefaultTimeout] ([DefaultNavigateTimeout] for
// browser_navigate; the wait by its timeoutMs plus 10 s).
func Call(ctx context.Context, c agentproto.Caller, name string, args json.RawMessage, opts *CallOptions) (*Result, error) {
	tool, ok := lookupTool(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	a, err := tool.validate(args)
	if err != nil {
		return nil, err
	}
	var progress func(Progress)
	maxGoal := DefaultMaxGoalTimeout
	if opts != nil {
		progress = opts.Progress
		if opts.MaxGoalTimeout > 0 {
			maxGoal = opts.MaxGoalTimeout
		}
	}
	typ, payload := "", map[string]json.RawMessage{}
	switch name {
	case BrowserSnapshot:
		typ = agentproto.TypeSnapshot
	case BrowserScreenshot:
		typ = agentproto.TypeScreenshot
	case BrowserNavigate:
		typ = agentproto.TypeNavigate
		copyArgs(payload, a, "url")
	case BrowserClick:
		typ = agentproto.TypeClick
		copyArgs(payload, a, "index", "selector")
	case BrowserType:
		typ = agentproto.TypeText
		copyArgs(payload, a, "index", "selector", "text", "clear")
	case BrowserPress:
		typ = agentproto.TypePress
		copyArgs(payload, a, "key")
	case BrowserScroll:
		typ = agentproto.TypeScroll
		payload["direction"] = json.RawMessage(`"down"`)
		copyArgs(payload, a, "direction")
		amount := json.RawMessage(strconv.Itoa(DefaultScrollAmount))
		if n, ok := a["amount"]; ok && numberValue(n) != 0 {
			amount = n
		}
		payload["amount"], payload["amountPx"] = amount, amount
	case BrowserExtract:
		typ = agentproto.TypeExtract
		copyArgs(payload, a, "instruction", "selector")
	case BrowserSolveCaptcha:
		typ = TypeSolveCaptcha
		if t, ok := a["type"]; ok && string(t) != `"auto"` {
			payload["type"] = t
		}
	case ExecuteGoal:
		return executeGoal(ctx, c, a, maxGoal, progress)
	}
	timeout := DefaultTimeout
	if typ == agentproto.TypeNavigate {
		timeout = DefaultNavigateTimeout
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
	case BrowserNavigate:
		return "Navigated to " + jsValue(a["url"]).String() + ". Current title: " + r.get("title").or(jsString("")).String()
	case BrowserClick:
		return "Clicked element. " + status()
	case BrowserType:
		return `Typed into element: "` + jsValue(a["text"]).String() + `". ` + status()
	case BrowserPress:
		return `Pressed key "` + jsValue(a["key"]).String() + `". ` + status()
	case BrowserScroll:
		return "Scrolled " + jsValue(a["direction"]).or(jsString("down")).String() + ". " + status()
	case BrowserExtract, BrowserSolveCaptcha:
		if s, ok := r.isString(); ok {
			return s
		}
	}
	return jsStringify(res)
}

// callWithin makes one call, bounded by timeout when ctx has no deadline.
func callWithin(ctx context.Context, c agentproto.Caller, timeout time.Duration, typ string, payload json.RawMessage, result *json.RawMessage) error {
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
		return &ArgumentsError{Tool: t.Name, Path: path, Message: msg}
	}
	if len(args) > maxArgumentsSize {
		return nil, bad("", "arguments exceed "+strconv.Itoa(maxArgumentsSize)+" bytes")
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = wire.EmptyObject
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
		return json.RawMessage(wire.EmptyObject)
	}
	return b
}

// newToolResult builds the result of tool name, called with the arguments
// a, from the command's raw result.
func newToolResult(name string, a map[string]json.RawMessage, res json.RawMessage) *Result {
	if img := resultImage(res); img != nil {
		return &Result{Result: res, Image: img, Structured: screenshotStructured(res, img),
			Text: "Screenshot (" + img.MIMEType + ", " + strconv.Itoa(len(img.Data)) + " bytes)"}
	}
	return &Result{Result: res, Text: commandText(name, a, res), Structured: wrapResult(res)}
}

// maxStructuredDepth is the deepest result [Result.Structured]
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
	if len(res) == 0 || res[wire.SkipSpace(res)] != '{' {
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
	shot, err := agentproto.DecodeDataURL(*u)
	if err != nil || !strings.HasPrefix(shot.MIMEType, "image/") {
		return nil
	}
	return &Image{MIMEType: shot.MIMEType, Data: shot.Data}
}

// executeGoal runs weboperator_execute_goal: tasks.start, tasks.wait, and
// the reference's summary of the task. A call cancelled once the task
// started stops it (tasks.stop).
func executeGoal(ctx context.Context, c agentproto.Caller, a map[string]json.RawMessage, maxWait time.Duration, progress func(Progress)) (*Result, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	wait := DefaultGoalTimeout
	if n := numberValue(a["timeoutMs"]); n > 0 {
		wait = wire.ClampMillis(n, maxWait)
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
	if err := callWithin(startCtx, c, DefaultTimeout, agentproto.TypeTasksStart, start, &started); err != nil {
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
	progress(Progress{Message: "Task " + id.String() + " started; waiting up to " + wait.String() + " for it to finish"})
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
		// Steps the events did not show (none without an agentproto.EventCaller):
		// the last report counts them all.
		progress(Progress{Done: len(n), Total: len(n), Message: "Task " + id.String() + " is " + task.get("status").String()})
	}
	return res, nil
}

// stopTask sends tasks.stop for the task id of a call whose ctx ended,
// within stopTaskTimeout; its outcome changes nothing for the caller.
func stopTask(ctx context.Context, c agentproto.Caller, id jsValue) {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTaskTimeout)
	defer cancel()
	var res json.RawMessage
	_ = c.Call(stopCtx, agentproto.TypeTasksStop, orderedObject(map[string]json.RawMessage{"id": json.RawMessage(id)}), &res)
}

// waitTask sends tasks.wait and, when c carries events, reports each step
// of the task that finishes meanwhile.
func waitTask(ctx context.Context, c agentproto.Caller, timeout time.Duration, payload json.RawMessage, steps *stepCounter, progress func(Progress)) (json.RawMessage, error) {
	var sub *agentproto.Subscription
	if ec, ok := c.(agentproto.EventCaller); ok && steps.task != "" {
		sub = ec.Subscribe(nil)
	}
	if sub == nil {
		var final json.RawMessage
		err := callWithin(ctx, c, timeout, agentproto.TypeTasksWait, payload, &final)
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
		o.err = callWithin(ctx, c, timeout, agentproto.TypeTasksWait, payload, &o.final)
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

func (s *stepCounter) observe(e agentproto.Event) (Progress, bool) {
	if e.TaskID() != s.task {
		return Progress{}, false
	}
	v, err := e.Decode()
	if err != nil {
		return Progress{}, false
	}
	switch ev := v.(type) {
	case *agentproto.TaskUpdateEvent:
		var plan struct {
			Steps []json.RawMessage `json:"steps"`
		}
		if json.Unmarshal(ev.Task.Plan, &plan) == nil {
			s.total = max(s.total, len(plan.Steps))
		}
	case *agentproto.TaskStepEvent:
		st := ev.Step.Status
		key := ev.Step.ID + "#" + strconv.Itoa(ev.Step.Index)
		if (st != agentproto.StepOK && st != agentproto.StepFail && st != agentproto.StepSkipped) || s.seen[key] {
			return Progress{}, false
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
		return Progress{Done: s.done, Total: total, Message: "Step " + strconv.Itoa(s.done) + " (" + what + "): " + string(st)}, true
	}
	return Progress{}, false
}

// goalResult is weboperator_execute_goal's result for task, the value of
// tasks.wait (or tasks.start) as the reference reads it.
func goalResult(task jsValue, id string) *Result {
	summary, text := summarizeTask(task)
	summary.TaskID = id
	res, err := json.Marshal(summary)
	if err != nil { // a GoalSummary always marshals
		res = []byte(`{}`)
	}
	return &Result{Result: res, Text: text, Structured: res}
}

// summarizeTask is the reference's formatTaskResultForAgent: the summary
// of a task for an agent (the answer of its done step, else a step note,
// else what it extracted, else its completed plan steps, else its status),
// and the reference's text of it: the answer, else the summary as JSON.
func summarizeTask(task jsValue) (*GoalSummary, string) {
	if !task.truthy() {
		const notFound = "Task not found or timed out"
		return &GoalSummary{Status: agentproto.StatusFailed, Error: notFound},
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

	summary := &GoalSummary{OK: status == "done", Status: agentproto.TaskStatus(status), Answer: answer.String(), StepCount: len(steps)}
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
