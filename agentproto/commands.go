package agentproto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// Health asks the bridge for its status (answered by the bridge itself,
// without the extension). A result without ok, bridge and extension is an
// error matching [ErrInvalidResult].
func (c *Client) Health(ctx context.Context) (*HealthResult, error) {
	var r HealthResult
	if err := c.typedCall(ctx, TypeHealth, nil, &healthShape, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Navigate loads a URL and returns after the page has loaded. A result
// without ok, tabId and url is an error matching [ErrInvalidResult].
func (c *Client) Navigate(ctx context.Context, p NavigateParams) (*NavigateResult, error) {
	var r NavigateResult
	if err := c.typedCall(ctx, TypeNavigate, p, &navigateShape, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Snapshot takes a snapshot of the page, with a ref per node. A result
// that is not {"kind":"snapshot","snapshot":{…}} with the snapshot's url,
// title, viewport, nodes, domHash and takenAt, or has a node without a
// ref, is an error matching [ErrInvalidResult]; so is the reference
// extension's {"kind":"error","error":…} (its page script threw), which
// also carries the message as a *[RemoteError].
func (c *Client) Snapshot(ctx context.Context, p SnapshotParams) (*Snapshot, error) {
	var r SnapshotResult
	if err := c.typedCall(ctx, TypeSnapshot, p, &snapshotShape, &r); err != nil {
		return nil, err
	}
	for i := range r.Snapshot.Nodes {
		if r.Snapshot.Nodes[i].Ref == "" {
			return nil, invalidResult(TypeSnapshot, "result.snapshot.nodes[%d] has no ref", i)
		}
	}
	return &r.Snapshot, nil
}

// Screenshot captures the visible part of the page. A result that is not
// {"kind":"screenshot","dataUrl":"…"} is an error matching
// [ErrInvalidResult]; a data URL that is not base64 matches
// [ErrBadDataURL] too.
func (c *Client) Screenshot(ctx context.Context, p ScreenshotParams) (*Screenshot, error) {
	res, buf, err := c.call(ctx, TypeScreenshot, p)
	if err != nil {
		return nil, err
	}
	var vals shapeValues
	err = screenshotShape.check(TypeScreenshot, "result", res, &vals)
	dataURL := vals[0]
	if err == nil && dataURL[0] != '"' {
		err = invalidResult(TypeScreenshot, "result.dataUrl is not a string")
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	var shot *Screenshot
	if bytes.IndexByte(dataURL, '\\') < 0 {
		// The image's base64 text is decoded straight from the frame: a
		// screenshot can be megabytes, which encoding/json would check,
		// then copy into a string, before base64 decoded it.
		shot, err = decodeDataURL(dataURL[1 : len(dataURL)-1])
		buf.Release()
	} else {
		var r ScreenshotResult
		if err := decodeResult(TypeScreenshot, res, buf, &r); err != nil {
			return nil, err
		}
		shot, err = DecodeDataURL(r.DataURL)
	}
	if err != nil {
		return nil, fmt.Errorf("%w of %s: %w", ErrInvalidResult, TypeScreenshot, err)
	}
	return shot, nil
}

// typedCall makes one call, checks its result against shape, and
// decodes the result into result.
func (c *Client) typedCall(ctx context.Context, typ string, p any, shape *resultShape, result any) error {
	res, buf, err := c.call(ctx, typ, p)
	if err != nil {
		return err
	}
	if err := shape.check(typ, "result", res, nil); err != nil {
		buf.Release()
		return err
	}
	return decodeResult(typ, res, buf, result)
}

func (c *Client) action(ctx context.Context, typ string, p any) (*ActionResult, error) {
	var r ActionResult
	if err := c.typedCall(ctx, typ, p, &actionShape, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Click clicks a node. A click that failed in the page is a result with
// OK() false, not an error. A result that is not
// {"kind":"action:result","result":{"ok":…}} is an error matching
// [ErrInvalidResult], as for every action below.
func (c *Client) Click(ctx context.Context, p ClickParams) (*ActionResult, error) {
	return c.action(ctx, TypeClick, p)
}

// Type types text into a node.
func (c *Client) Type(ctx context.Context, p TypeParams) (*ActionResult, error) {
	return c.action(ctx, TypeText, p)
}

// Press presses a key (Enter when p.Key is empty).
func (c *Client) Press(ctx context.Context, p PressParams) (*ActionResult, error) {
	return c.action(ctx, TypePress, p)
}

// Scroll scrolls the page or to a node.
func (c *Client) Scroll(ctx context.Context, p ScrollParams) (*ActionResult, error) {
	return c.action(ctx, TypeScroll, p)
}

// Extract reads the text of nodes; the result's Result.Extracted lists them.
func (c *Client) Extract(ctx context.Context, p ExtractParams) (*ActionResult, error) {
	return c.action(ctx, TypeExtract, p)
}

// ListTasks returns up to 50 tasks, newest first. A result that is not a
// list of tasks, each with an id and a status, is an error matching
// [ErrInvalidResult].
func (c *Client) ListTasks(ctx context.Context) ([]Task, error) {
	res, buf, err := c.call(ctx, TypeTasksList, struct{}{})
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || res[0] != '[' {
		err := invalidResult(TypeTasksList, "result is %s, not a list", jsonKind(res))
		buf.Release()
		return nil, err
	}
	var r []Task
	if err := decodeResult(TypeTasksList, res, buf, &r); err != nil {
		return nil, err
	}
	for i := range r {
		if err := r[i].check(TypeTasksList, "result["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	if r == nil {
		r = []Task{}
	}
	return r, nil
}

// ErrNoTask is matched by the error of [Client.GetTask] and
// [Client.WaitTask] when the extension has no task with that id (it
// answers null).
var ErrNoTask = errors.New("agentproto: no such task")

// GetTask returns a task with its steps. When there is none with that id
// the error matches [ErrNoTask]; a result that is not a task with an id
// and a status matches [ErrInvalidResult].
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	res, buf, err := c.call(ctx, TypeTasksGet, TaskParams{ID: id})
	if err != nil {
		return nil, err
	}
	return decodeTask(TypeTasksGet, res, buf, true)
}

// decodeTask decodes a task result; null is [ErrNoTask] when noTask is
// set, an invalid result otherwise.
func decodeTask(typ string, res []byte, buf *wire.Buffer, noTask bool) (*Task, error) {
	if noTask && string(res) == "null" {
		buf.Release()
		return nil, fmt.Errorf("%w (%s answered null)", ErrNoTask, typ)
	}
	if err := taskShape.check(typ, "result", res, nil); err != nil {
		buf.Release()
		return nil, err
	}
	var r Task
	if err := decodeResult(typ, res, buf, &r); err != nil {
		return nil, err
	}
	if err := r.check(typ, "result"); err != nil {
		return nil, err
	}
	return &r, nil
}

// check reports a task that has no id or no status: what the result
// named what of a request of type typ must carry.
func (t *Task) check(typ, what string) error {
	if t.ID == "" {
		return invalidResult(typ, "%s has no id", what)
	}
	if t.Status == "" {
		return invalidResult(typ, "%s has no status", what)
	}
	return nil
}

// ErrRelativeAttachment is returned by StartTask for an attachment whose
// path is not absolute.
var ErrRelativeAttachment = errors.New("agentproto: attachment path must be absolute")

// StartTask starts a browser task and returns it (status idle). A result
// that is not a task with an id and a status is an error matching
// [ErrInvalidResult].
func (c *Client) StartTask(ctx context.Context, p StartTaskParams) (*Task, error) {
	for _, a := range p.Attachments {
		if !filepath.IsAbs(a.Path) {
			return nil, ErrRelativeAttachment
		}
	}
	res, buf, err := c.call(ctx, TypeTasksStart, p)
	if err != nil {
		return nil, err
	}
	return decodeTask(TypeTasksStart, res, buf, false)
}

// taskControl sends a task command answered {"ok":true}: any other
// result is an error matching [ErrInvalidResult].
func (c *Client) taskControl(ctx context.Context, typ string, p any) error {
	var r OKResult
	if err := c.typedCall(ctx, typ, p, &okShape, &r); err != nil {
		return err
	}
	if !r.OK {
		return invalidResult(typ, "result.ok is false")
	}
	return nil
}

// StopTask stops a task. Like PauseTask, ResumeTask and ConfirmTask, it
// returns an error matching [ErrInvalidResult] for a result other than
// {"ok":true}.
func (c *Client) StopTask(ctx context.Context, id string) error {
	return c.taskControl(ctx, TypeTasksStop, TaskParams{ID: id})
}

// PauseTask pauses a task.
func (c *Client) PauseTask(ctx context.Context, id string) error {
	return c.taskControl(ctx, TypeTasksPause, TaskParams{ID: id})
}

// ResumeTask resumes a paused task.
func (c *Client) ResumeTask(ctx context.Context, id string) error {
	return c.taskControl(ctx, TypeTasksResume, TaskParams{ID: id})
}

// ConfirmTask answers a task awaiting confirmation: allow true approves,
// false refuses.
func (c *Client) ConfirmTask(ctx context.Context, id string, allow bool) error {
	return c.taskControl(ctx, TypeTasksConfirm, ConfirmParams{ID: id, Allow: allow})
}

// waitMargin is how much longer than tasks.wait's own wait the bridge
// is given before it times the request out (the reference's HTTP layer
// adds 5 s).
const waitMargin = wire.WaitMargin

// WaitTask waits until a task settles ([TaskStatus.Settled]) and returns it.
// If the wait ends first, the task is returned in its current state, not
// an error. When there is no task with that id the error matches
// [ErrNoTask]; a result that is not a task with an id and a status
// matches [ErrInvalidResult].
//
// The wait lasts p.TimeoutMs; when zero, it is the time ctx leaves less
// a margin (for a ctx with a deadline) or else the extension's default of
// 120 s. The request's own timeout is set above the wait, so that the
// bridge does not time out a wait that is still running.
func (c *Client) WaitTask(ctx context.Context, p WaitParams) (*Task, error) {
	wait := time.Duration(p.TimeoutMs) * time.Millisecond
	deadline, hasDeadline := ctx.Deadline()
	if wait <= 0 {
		wait = DefaultWaitTimeout
		if hasDeadline {
			wait = min(wait, time.Until(deadline)-waitMargin-timeoutMargin(time.Until(deadline)))
			if wait < time.Millisecond {
				wait = time.Until(deadline) / 2
			}
		}
		p.TimeoutMs = int64(wait / time.Millisecond)
		if p.TimeoutMs <= 0 {
			return nil, ctxError(ctx, context.DeadlineExceeded)
		}
	}
	timeout := wait + waitMargin
	if hasDeadline {
		remaining := time.Until(deadline)
		timeout = min(timeout, remaining-timeoutMargin(remaining))
	}
	if timeout < time.Millisecond {
		return nil, ctxError(ctx, context.DeadlineExceeded)
	}
	raw, err := encodePayload(p)
	if err != nil {
		return nil, err
	}
	res, buf, err := c.do(ctx, TypeTasksWait, raw, timeout)
	if err != nil {
		return nil, err
	}
	return decodeTask(TypeTasksWait, res, buf, true)
}

// A resultShape is what a typed method requires of a JSON object in its
// result: these members, none of them null, and a "kind" member equal to
// kind unless kind is empty; nested, when set, is the shape of the first
// required member, named nestedWhat in errors. Keys match exactly, as in
// JavaScript; of a member named twice the last counts, as in
// encoding/json.
type resultShape struct {
	kind       string
	required   []string
	nested     *resultShape
	nestedWhat string
}

// shapeValues receives the raw values of a shape's required members.
type shapeValues [6][]byte

var (
	healthShape       = resultShape{required: []string{"ok", "bridge", "extension"}}
	navigateShape     = resultShape{required: []string{"ok", "tabId", "url"}}
	snapshotShape     = resultShape{kind: "snapshot", required: []string{"snapshot"}, nested: &snapshotBodyShape, nestedWhat: "result.snapshot"}
	snapshotBodyShape = resultShape{required: []string{"url", "title", "viewport", "nodes", "domHash", "takenAt"}}
	screenshotShape   = resultShape{kind: "screenshot", required: []string{"dataUrl"}}
	actionShape       = resultShape{kind: "action:result", required: []string{"result"}, nested: &outcomeShape, nestedWhat: "result.result"}
	outcomeShape      = resultShape{required: []string{"ok"}}
	taskShape         = resultShape{required: []string{"id", "status"}}
	okShape           = resultShape{required: []string{"ok"}}
)

// check checks obj, the part named what of the result of a request of
// type typ, and stores the required members' values in vals (when not
// nil), in the order of s.required. A {"kind":"error","error":"…"} where
// another kind is required (what the reference extension relays when its
// page script threw) is reported with the message as a *[RemoteError].
func (s *resultShape) check(typ, what string, obj []byte, vals *shapeValues) error {
	if len(obj) == 0 || obj[0] != '{' {
		return invalidResult(typ, "%s is %s, not an object", what, jsonKind(obj))
	}
	var found shapeValues
	var kind, errMsg []byte
	var it wire.Members
	it.Reset(obj)
	for it.Next() {
		m := it.Member()
		key := wire.UnescapeKey(m)
		switch string(key) {
		case "kind":
			kind = m.Value
		case "error":
			errMsg = m.Value
		}
		for i, name := range s.required {
			if string(key) == name {
				found[i] = m.Value
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w of %s: %w", ErrInvalidResult, typ, err)
	}
	if s.kind != "" {
		k, _ := wire.Unquote(kind)
		switch {
		case kind == nil || kind[0] != '"':
			return invalidResult(typ, "%s has no kind (want %q)", what, s.kind)
		case string(k) == "error" && errMsg != nil && errMsg[0] == '"':
			msg, _ := wire.Unquote(errMsg)
			return fmt.Errorf("%w of %s: %s is an error: %w", ErrInvalidResult, typ, what, &RemoteError{Message: string(msg)})
		case string(k) != s.kind:
			return invalidResult(typ, "%s has kind %q, not %q", what, k, s.kind)
		}
	}
	for i, name := range s.required {
		switch {
		case found[i] == nil:
			return invalidResult(typ, "%s has no %q member", what, name)
		case string(found[i]) == "null":
			return invalidResult(typ, "%s.%s is null", what, name)
		}
	}
	if s.nested != nil {
		if err := s.nested.check(typ, s.nestedWhat, found[0], nil); err != nil {
			return err
		}
	}
	if vals != nil {
		*vals = found
	}
	return nil
}

// invalidResult is an error matching [ErrInvalidResult] for the result
// of a request of type typ.
func invalidResult(typ, format string, args ...any) error {
	return fmt.Errorf("%w of %s: %s", ErrInvalidResult, typ, fmt.Sprintf(format, args...))
}

// jsonKind names the kind of a raw JSON value, for errors that must not
// quote it.
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
