package agentproto

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// Health asks the bridge for its status (answered by the bridge itself,
// without the extension).
func (c *Client) Health(ctx context.Context) (*HealthResult, error) {
	var r HealthResult
	if err := c.Call(ctx, TypeHealth, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Navigate loads a URL and returns after the page has loaded.
func (c *Client) Navigate(ctx context.Context, p NavigateParams) (*NavigateResult, error) {
	var r NavigateResult
	if err := c.Call(ctx, TypeNavigate, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Snapshot takes a snapshot of the page, with a ref per node.
func (c *Client) Snapshot(ctx context.Context, p SnapshotParams) (*Snapshot, error) {
	var r SnapshotResult
	if err := c.Call(ctx, TypeSnapshot, p, &r); err != nil {
		return nil, err
	}
	return &r.Snapshot, nil
}

// Screenshot captures the visible part of the page.
func (c *Client) Screenshot(ctx context.Context, p ScreenshotParams) (*Screenshot, error) {
	res, buf, err := c.call(ctx, TypeScreenshot, p)
	if err != nil {
		return nil, err
	}
	// The image's base64 text is decoded straight from the frame: a
	// screenshot can be megabytes, which encoding/json would check, then
	// copy into a string, before base64 decoded it.
	if dataURL, ok := plainDataURL(res); ok {
		shot, err := decodeDataURL(dataURL)
		buf.Release()
		return shot, err
	}
	var r ScreenshotResult
	if err := decodeResult(res, buf, &r); err != nil {
		return nil, err
	}
	return DecodeDataURL(r.DataURL)
}

// plainDataURL returns the contents of a screenshot result's dataUrl
// string when it has no escapes (as base64 data URLs have none).
func plainDataURL(res []byte) ([]byte, bool) {
	var it wire.Members
	it.Reset(res)
	var dataURL []byte
	for it.Next() {
		if m := it.Member(); string(wire.UnescapeKey(m)) == "dataUrl" {
			dataURL = m.Value // the last wins, as in encoding/json
		}
	}
	if it.Err() != nil || len(dataURL) < 2 || dataURL[0] != '"' || bytes.IndexByte(dataURL, '\\') >= 0 {
		return nil, false
	}
	return dataURL[1 : len(dataURL)-1], true
}

func (c *Client) action(ctx context.Context, typ string, p any) (*ActionResult, error) {
	var r ActionResult
	if err := c.Call(ctx, typ, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Click clicks a node. A click that failed in the page is a result with
// OK() false, not an error.
func (c *Client) Click(ctx context.Context, p ClickParams) (*ActionResult, error) {
	return c.action(ctx, TypeClick, p)
}

// Type types text into a node.
func (c *Client) Type(ctx context.Context, p TypeParams) (*ActionResult, error) {
	return c.action(ctx, TypeType, p)
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

// ListTasks returns up to 50 tasks, newest first.
func (c *Client) ListTasks(ctx context.Context) ([]Task, error) {
	var r []Task
	if err := c.Call(ctx, TypeTasksList, struct{}{}, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// GetTask returns a task with its steps, or nil when there is none with
// that id.
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	var r *Task
	if err := c.Call(ctx, TypeTasksGet, TaskParams{ID: id}, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// ErrRelativeAttachment is returned by StartTask for an attachment whose
// path is not absolute.
var ErrRelativeAttachment = errors.New("agentproto: attachment path must be absolute")

// StartTask starts a browser task and returns it (status idle).
func (c *Client) StartTask(ctx context.Context, p StartTaskParams) (*Task, error) {
	for _, a := range p.Attachments {
		if !filepath.IsAbs(a.Path) {
			return nil, ErrRelativeAttachment
		}
	}
	var r Task
	if err := c.Call(ctx, TypeTasksStart, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (c *Client) taskControl(ctx context.Context, typ string, p any) error {
	return c.Call(ctx, typ, p, nil)
}

// StopTask stops a task.
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
// an error.
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
	var r *Task
	if err := decodeResult(res, buf, &r); err != nil {
		return nil, err
	}
	return r, nil
}
