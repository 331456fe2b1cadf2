package agentproto

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SnapshotParams is browser.snapshot's payload.
type SnapshotParams struct {
	// TabID targets a tab; zero means the active tab of the last-focused
	// window (for every command).
	TabID int `json:"tabId,omitempty"`
	// AllElements includes elements outside the viewport.
	AllElements bool `json:"allElements,omitempty"`
}

// ScreenshotParams is browser.screenshot's payload.
type ScreenshotParams struct {
	TabID int `json:"tabId,omitempty"`
}

// NavigateParams is browser.navigate's payload.
type NavigateParams struct {
	URL   string `json:"url"`
	TabID int    `json:"tabId,omitempty"`
}

// ClickParams is browser.click's payload.
type ClickParams struct {
	Ref    string `json:"ref"` // "@e12"
	Reason string `json:"reason,omitempty"`
	TabID  int    `json:"tabId,omitempty"`
}

// TypeMode is how browser.type enters its text.
type TypeMode string

// Typing modes of browser.type. The zero value sends none, which the
// extensions read as [TypeModeReplace].
const (
	TypeModeReplace TypeMode = "replace"
	TypeModeAppend  TypeMode = "append"
)

// TypeParams is browser.type's payload.
type TypeParams struct {
	Ref  string `json:"ref"`
	Text string `json:"text"`
	// Mode is [TypeModeReplace] (the default when empty) or [TypeModeAppend].
	Mode TypeMode `json:"mode,omitempty"`
	// Submit presses Enter after typing. It travels as the string "true"
	// or "false", as the extension expects.
	Submit bool `json:"submit,string"`
	TabID  int  `json:"tabId,omitempty"`
}

// PressParams is browser.press's payload.
type PressParams struct {
	// Key is the key to press; empty means Enter.
	Key string `json:"key,omitempty"`
	// Modifiers are joined with "+", such as "ctrl+shift".
	Modifiers string `json:"modifiers,omitempty"`
	Ref       string `json:"ref,omitempty"`
	TabID     int    `json:"tabId,omitempty"`
}

// ScrollDirection is where browser.scroll scrolls.
type ScrollDirection string

// Scroll directions of browser.scroll. The zero value sends none, which
// the extensions read as [ScrollDown] (the reference extension fails an
// empty direction, so none is sent rather than "").
const (
	ScrollUp     ScrollDirection = "up"
	ScrollDown   ScrollDirection = "down"
	ScrollTop    ScrollDirection = "top"
	ScrollBottom ScrollDirection = "bottom"
	ScrollToRef  ScrollDirection = "to_ref" // to ScrollParams.Ref
)

// ScrollParams is browser.scroll's payload.
type ScrollParams struct {
	// Direction is where to scroll; empty means [ScrollDown].
	Direction ScrollDirection `json:"direction,omitempty"`
	AmountPx  int             `json:"amountPx,omitempty"`
	Ref       string          `json:"ref,omitempty"` // for ScrollToRef
	TabID     int             `json:"tabId,omitempty"`
}

// ExtractTarget is what browser.extract reads: [ExtractVisible],
// [ExtractAll], or a comma-separated list of refs ([ExtractRefs]). The
// zero value is none: the reference extension then extracts nothing (and
// this project's reads it as ExtractVisible), so set one.
type ExtractTarget string

// Extraction targets of browser.extract besides a list of refs.
const (
	ExtractVisible ExtractTarget = "visible"
	ExtractAll     ExtractTarget = "all"
)

// ExtractRefs returns the target that reads the given refs ("@e1,@e2").
func ExtractRefs(refs ...string) ExtractTarget {
	return ExtractTarget(strings.Join(refs, ","))
}

// ExtractParams is browser.extract's payload.
type ExtractParams struct {
	// Refs is what to read: [ExtractVisible], [ExtractAll] or
	// [ExtractRefs].
	Refs  ExtractTarget `json:"refs"`
	TabID int           `json:"tabId,omitempty"`
}

// TaskParams is the payload of tasks.get, tasks.stop, tasks.pause and
// tasks.resume.
type TaskParams struct {
	ID string `json:"id"`
}

// ConfirmParams is tasks.confirm's payload. Only Allow true approves.
type ConfirmParams struct {
	ID    string `json:"id"`
	Allow bool   `json:"allow"`
}

// WaitParams is tasks.wait's payload.
type WaitParams struct {
	ID string `json:"id"`
	// TimeoutMs is how long the extension waits for the task to settle
	// before answering with its current state; zero means its default,
	// 120,000 ms.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// StartTaskParams is tasks.start's payload.
type StartTaskParams struct {
	Goal     string `json:"goal"`
	StartURL string `json:"startUrl,omitempty"`
	TabID    int    `json:"tabId,omitempty"`
	// AutoConfirm lets the agent act without asking; final Apply, Submit
	// and Send controls ask all the same. Keep it false for application
	// flows.
	AutoConfirm bool         `json:"autoConfirm,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	TimeoutMs   int64        `json:"timeoutMs,omitempty"`
}

// Attachment is a file a task may upload, exposed to the browser agent
// only by its ID. Path must be absolute.
type Attachment struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	MIMEType string `json:"mimeType,omitempty"`
}

// NavigateResult is browser.navigate's result, sent after the page loaded.
type NavigateResult struct {
	OK    bool   `json:"ok"`
	TabID int    `json:"tabId"`
	URL   string `json:"url"`
}

// ActionResult is the result of browser.click, type, press, scroll and
// extract: {"kind":"action:result","result":{…}}. A failed action is a
// result with OK false, not an error.
type ActionResult struct {
	Kind   string        `json:"kind"` // "action:result"
	Result ActionOutcome `json:"result"`
}

// OK reports whether the action succeeded.
func (r *ActionResult) OK() bool { return r.Result.OK }

// ActionOutcome is what an action did.
type ActionOutcome struct {
	OK         bool            `json:"ok"`
	Error      string          `json:"error,omitempty"`
	DurationMs float64         `json:"durationMs,omitempty"`
	Extracted  []ExtractedItem `json:"extracted,omitempty"`
}

// ExtractedItem is one element browser.extract read.
type ExtractedItem struct {
	Ref   string `json:"ref"`
	Text  string `json:"text"`
	Value string `json:"value,omitempty"`
	Href  string `json:"href,omitempty"`
}

// SnapshotResult is browser.snapshot's result.
type SnapshotResult struct {
	Kind     string   `json:"kind"` // "snapshot"
	Snapshot Snapshot `json:"snapshot"`
}

// Snapshot is the page as the browser agent sees it: the interactive
// nodes, each with a ref valid until the next snapshot.
type Snapshot struct {
	URL          string   `json:"url"`
	Title        string   `json:"title"`
	Viewport     Viewport `json:"viewport"`
	Nodes        []Node   `json:"nodes"`
	TextSnippets []string `json:"textSnippets,omitempty"`
	DOMHash      string   `json:"domHash"`
	TakenAt      float64  `json:"takenAt"`
}

// Node finds the node with the given ref, or nil.
func (s *Snapshot) Node(ref string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].Ref == ref {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Viewport is the visible part of the page.
type Viewport struct {
	W       float64 `json:"w"`
	H       float64 `json:"h"`
	ScrollX float64 `json:"scrollX"`
	ScrollY float64 `json:"scrollY"`
}

// Node is one element of a snapshot.
type Node struct {
	Ref        string   `json:"ref"`
	Role       string   `json:"role"`
	Name       string   `json:"name"`
	Value      string   `json:"value,omitempty"`
	Href       string   `json:"href,omitempty"`
	State      []string `json:"state,omitempty"`
	BBox       BBox     `json:"bbox"`
	InViewport bool     `json:"inViewport"`
	FrameID    *int     `json:"frameId,omitempty"`
}

// BBox is a node's bounding box in CSS pixels.
type BBox struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// Ref is a parsed element reference: "@e12" (Frame -1: the top frame) or
// "@f3e12" (inside frame 3).
type Ref struct {
	Frame int // -1 for the top frame
	Index int // N of eN, from 1
}

// ParseRef parses "@eN" or "@f<frameId>eN".
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, "@")
	if !ok {
		return Ref{}, fmt.Errorf("agentproto: ref %q does not start with @", s)
	}
	r := Ref{Frame: -1}
	if f, ok := strings.CutPrefix(rest, "f"); ok {
		frame, after, found := strings.Cut(f, "e")
		n, err := strconv.Atoi(frame)
		if !found || err != nil || n < 0 || frame != strconv.Itoa(n) {
			return Ref{}, fmt.Errorf("agentproto: malformed frame in ref %q", s)
		}
		r.Frame, rest = n, "e"+after
	}
	idx, ok := strings.CutPrefix(rest, "e")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil || n < 1 || idx != strconv.Itoa(n) {
		return Ref{}, fmt.Errorf("agentproto: malformed ref %q", s)
	}
	r.Index = n
	return r, nil
}

// String formats the ref as the extension writes it.
func (r Ref) String() string {
	if r.Frame >= 0 {
		return "@f" + strconv.Itoa(r.Frame) + "e" + strconv.Itoa(r.Index)
	}
	return "@e" + strconv.Itoa(r.Index)
}

// ScreenshotResult is browser.screenshot's result as sent.
type ScreenshotResult struct {
	Kind    string `json:"kind"` // "screenshot"
	DataURL string `json:"dataUrl"`
}

// Screenshot is a decoded screenshot.
type Screenshot struct {
	MIMEType string // "image/jpeg"
	Data     []byte
}

// ErrBadDataURL is matched by the error for a screenshot whose data URL
// is not a base64 data URL.
var ErrBadDataURL = errors.New("agentproto: malformed data URL")

// DecodeDataURL decodes a base64 "data:<type>;base64,<data>" URL.
func DecodeDataURL(u string) (*Screenshot, error) {
	comma := strings.IndexByte(u, ',')
	if comma < 0 {
		comma = len(u) - 1
	}
	mime, err := dataURLType(u[:comma+1])
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(u[comma+1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDataURL, err)
	}
	return &Screenshot{MIMEType: mime, Data: b}, nil
}

// decodeDataURL is [DecodeDataURL] for a URL in a byte slice, decoded
// without copying it into a string first.
func decodeDataURL(u []byte) (*Screenshot, error) {
	comma := bytes.IndexByte(u, ',')
	if comma < 0 {
		comma = len(u) - 1
	}
	mime, err := dataURLType(string(u[:comma+1]))
	if err != nil {
		return nil, err
	}
	data := u[comma+1:]
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDataURL, err)
	}
	return &Screenshot{MIMEType: mime, Data: b[:n]}, nil
}

// dataURLType checks a data URL's head, "data:<type>;base64,", and returns
// its media type.
func dataURLType(head string) (string, error) {
	rest, ok := strings.CutPrefix(head, "data:")
	if !ok {
		return "", fmt.Errorf("%w: no data: scheme", ErrBadDataURL)
	}
	meta, ok := strings.CutSuffix(rest, ",")
	if !ok {
		return "", fmt.Errorf("%w: no comma", ErrBadDataURL)
	}
	mime, ok := strings.CutSuffix(meta, ";base64")
	if !ok {
		return "", fmt.Errorf("%w: not base64", ErrBadDataURL)
	}
	return mime, nil
}

// TaskStatus is a task's status.
type TaskStatus string

// Task statuses.
const (
	StatusIdle            TaskStatus = "idle"
	StatusPlanning        TaskStatus = "planning"
	StatusRunning         TaskStatus = "running"
	StatusPaused          TaskStatus = "paused"
	StatusDone            TaskStatus = "done"
	StatusFailed          TaskStatus = "failed"
	StatusStopped         TaskStatus = "stopped"
	StatusAwaitingConfirm TaskStatus = "awaiting_confirm"
)

// Final reports whether the task has ended for good: done, failed or
// stopped. (The reference's own test forgets stopped, so a tasks.wait on a
// stopped task there runs to its timeout; this one does not.)
func (s TaskStatus) Final() bool {
	return s == StatusDone || s == StatusFailed || s == StatusStopped
}

// NeedsUser reports whether the task waits for a person: paused or
// awaiting confirmation.
func (s TaskStatus) NeedsUser() bool {
	return s == StatusPaused || s == StatusAwaitingConfirm
}

// Settled reports whether tasks.wait returns for a task in this status:
// Final or NeedsUser.
func (s TaskStatus) Settled() bool { return s.Final() || s.NeedsUser() }

// Task is a browser task. Fields this package does not model are kept in
// the raw result (use [Client.Call] with a json.RawMessage to see them).
type Task struct {
	ID             string          `json:"id"`
	Goal           string          `json:"goal"`
	TabID          int             `json:"tabId,omitempty"`
	Status         TaskStatus      `json:"status"`
	Steps          []Step          `json:"steps"`
	Plan           json.RawMessage `json:"plan,omitempty"`
	CreatedAt      float64         `json:"createdAt"`
	UpdatedAt      float64         `json:"updatedAt"`
	Profile        json.RawMessage `json:"profile,omitempty"`
	Provider       string          `json:"provider,omitempty"`
	ModelUsed      string          `json:"modelUsed,omitempty"`
	Error          string          `json:"error,omitempty"`
	PauseReason    string          `json:"pauseReason,omitempty"`
	PartialSummary string          `json:"partialSummary,omitempty"`
}

// StepStatus is a step's status.
type StepStatus string

// Step statuses.
const (
	StepPending StepStatus = "pending"
	StepRunning StepStatus = "running"
	StepOK      StepStatus = "ok"
	StepFail    StepStatus = "fail"
	StepSkipped StepStatus = "skipped"
)

// Step is one step of a task. The large optional fields are present in
// tasks.get results only.
type Step struct {
	ID                string          `json:"id"`
	Index             int             `json:"index"`
	Status            StepStatus      `json:"status"`
	StartedAt         float64         `json:"startedAt"`
	FinishedAt        float64         `json:"finishedAt,omitempty"`
	Thought           string          `json:"thought,omitempty"`
	ToolCall          *ToolCall       `json:"toolCall,omitempty"`
	Result            *StepResult     `json:"result,omitempty"`
	Note              string          `json:"note,omitempty"`
	Snapshot          json.RawMessage `json:"snapshot,omitempty"`
	ScreenshotDataURL string          `json:"screenshotDataUrl,omitempty"`
	Prompt            json.RawMessage `json:"prompt,omitempty"`
	Thinking          string          `json:"thinking,omitempty"`
}

// ToolCall is the action a step took.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	ID        string          `json:"id,omitempty"`
}

// StepResult is what a step's action did.
type StepResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Extracted is what the step extracted, as the extension stored it:
	// any JSON (a list of [ExtractedItem] from an extract step, an object
	// from a sheet step, a string). ExtractedItems reads the common list.
	Extracted  json.RawMessage `json:"extracted,omitempty"`
	DurationMs float64         `json:"durationMs"`
}

// ErrNotExtractedItems is matched by [StepResult.ExtractedItems]'s error
// when the step extracted something other than a list of elements.
var ErrNotExtractedItems = errors.New("agentproto: the step's extracted value is not a list of elements")

// ExtractedItems returns Extracted as the list of elements an extract step
// reads: nil when the step extracted nothing (no member, or null), an
// error matching [ErrNotExtractedItems] when it extracted anything else
// (an object, a string, a list of other values).
func (r *StepResult) ExtractedItems() ([]ExtractedItem, error) {
	raw := bytes.TrimSpace(r.Extracted)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, ErrNotExtractedItems
	}
	var items []ExtractedItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotExtractedItems, err)
	}
	return items, nil
}

// OKResult is the result of tasks.stop, pause, resume and confirm.
type OKResult struct {
	OK bool `json:"ok"`
}
