package extension_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type task struct {
	ID          string   `json:"id"`
	Goal        string   `json:"goal"`
	TabID       int      `json:"tabId"`
	Status      string   `json:"status"`
	Plan        []string `json:"plan"`
	CreatedAt   int64    `json:"createdAt"`
	UpdatedAt   int64    `json:"updatedAt"`
	Profile     string   `json:"profile"`
	Error       string   `json:"error"`
	PauseReason string   `json:"pauseReason"`
	Steps       []struct {
		ID       string `json:"id"`
		Index    int    `json:"index"`
		Status   string `json:"status"`
		ToolCall struct {
			Name string `json:"name"`
		} `json:"toolCall"`
		Result struct {
			OK        bool   `json:"ok"`
			Error     string `json:"error"`
			Extracted []struct {
				Text string `json:"text"`
			} `json:"extracted"`
		} `json:"result"`
	} `json:"steps"`
}

func startTask(t testing.TB, l *link, payload map[string]any) task {
	t.Helper()
	var tk task
	l.result(t, "tasks.start", payload, &tk)
	require.NotEmpty(t, tk.ID)
	return tk
}

func waitTask(t testing.TB, l *link, id string) task {
	t.Helper()
	var tk task
	l.result(t, "tasks.wait", map[string]any{"id": id, "timeoutMs": 20000}, &tk)
	return tk
}

func ok(t testing.TB, l *link, typ string, payload map[string]any) {
	t.Helper()
	var res struct {
		OK bool `json:"ok"`
	}
	l.result(t, typ, payload, &res)
	require.True(t, res.OK)
}

func TestTasksRunScriptedSteps(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	l.drainEvents()

	goal := "click #inc; click #inc\nextract #count"
	tk := startTask(t, l, map[string]any{"goal": goal, "startUrl": fx.url("/click"), "autoConfirm": true})
	assert.Equal(t, "idle", tk.Status, "a new task is idle")
	assert.Equal(t, goal, tk.Goal)
	assert.NotZero(t, tk.TabID)
	assert.Positive(t, tk.CreatedAt)

	done := waitTask(t, l, tk.ID)
	require.Equal(t, "done", done.Status, done.Error)
	assert.Equal(t, []string{"navigate " + fx.url("/click"), "click #inc", "click #inc", "extract #count"}, done.Plan)
	require.Len(t, done.Steps, 4)
	for i, s := range done.Steps {
		assert.Equal(t, i, s.Index)
		assert.Equal(t, "ok", s.Status)
		assert.True(t, s.Result.OK)
	}
	require.Len(t, done.Steps[3].Result.Extracted, 1)
	assert.Equal(t, "clicked 2", done.Steps[3].Result.Extracted[0].Text)

	var got task
	l.result(t, "tasks.get", map[string]any{"id": tk.ID}, &got)
	assert.Equal(t, done.ID, got.ID)
	assert.Equal(t, "done", got.Status)

	// Events: the task's status changes and each step, running then ok.
	var statuses []string
	steps := map[string][]string{}
	for _, raw := range l.takeEvents() {
		var e struct {
			Kind   string `json:"kind"`
			TaskID string `json:"taskId"`
			Task   task   `json:"task"`
			Step   struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"step"`
		}
		require.NoError(t, json.Unmarshal(raw, &e))
		switch {
		case e.Kind == "task:update" && e.Task.ID == tk.ID:
			statuses = append(statuses, e.Task.Status)
		case e.Kind == "task:step" && e.TaskID == tk.ID:
			steps[e.Step.ID] = append(steps[e.Step.ID], e.Step.Status)
		}
	}
	assert.Equal(t, []string{"idle", "planning", "running", "done"}, statuses)
	assert.Len(t, steps, 4)
	for id, seq := range steps {
		assert.Equal(t, []string{"running", "ok"}, seq, id)
	}

	var list []task
	l.result(t, "tasks.list", map[string]any{}, &list)
	require.NotEmpty(t, list)
	assert.Equal(t, tk.ID, list[0].ID, "newest first")
}

func TestTasksConfirm(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/plain")

	for _, tc := range []struct {
		name   string
		allow  any
		status string
	}{
		{"allow", true, "done"},
		{"deny", false, "failed"},
		{"string true", "true", "failed"}, // only JSON true approves
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := startTask(t, l, map[string]any{"goal": "confirm Submit the form?; extract #text"})
			waiting := waitTask(t, l, tk.ID)
			require.Equal(t, "awaiting_confirm", waiting.Status)
			assert.Equal(t, "Submit the form?", waiting.PauseReason)
			ok(t, l, "tasks.confirm", map[string]any{"id": tk.ID, "allow": tc.allow})
			final := waitTask(t, l, tk.ID)
			assert.Equal(t, tc.status, final.Status, final.Error)
			if tc.status == "failed" {
				assert.Contains(t, final.Error, "Confirmation denied")
			}
		})
	}

	t.Run("autoConfirm", func(t *testing.T) {
		tk := startTask(t, l, map[string]any{"goal": "confirm Go?; extract #text", "autoConfirm": true})
		final := waitTask(t, l, tk.ID)
		require.Equal(t, "done", final.Status, final.Error)
		assert.Equal(t, "Nothing to see", final.Steps[1].Result.Extracted[0].Text)
	})
}

func TestTasksPauseResumeStop(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/plain")

	tk := startTask(t, l, map[string]any{"goal": "wait 60000; extract #text"})
	// On its own timeout tasks.wait answers the task as it is, not an error.
	var current task
	l.result(t, "tasks.wait", map[string]any{"id": tk.ID, "timeoutMs": 50}, &current)
	assert.Equal(t, tk.ID, current.ID)
	assert.Contains(t, []string{"idle", "planning", "running"}, current.Status)
	var missing json.RawMessage
	l.result(t, "tasks.wait", map[string]any{"id": "task-none"}, &missing)
	assert.JSONEq(t, "null", string(missing))

	ok(t, l, "tasks.pause", map[string]any{"id": tk.ID})
	paused := waitTask(t, l, tk.ID)
	assert.Equal(t, "paused", paused.Status, "tasks.wait returns on paused")
	assert.NotEmpty(t, paused.PauseReason)

	ok(t, l, "tasks.resume", map[string]any{"id": tk.ID})
	var got task
	l.result(t, "tasks.get", map[string]any{"id": tk.ID}, &got)
	assert.Contains(t, []string{"planning", "running"}, got.Status)

	ok(t, l, "tasks.stop", map[string]any{"id": tk.ID})
	stopped := waitTask(t, l, tk.ID)
	assert.Equal(t, "stopped", stopped.Status, "tasks.wait treats stopped as final")
	// Stopping again, or resuming, changes nothing.
	ok(t, l, "tasks.stop", map[string]any{"id": tk.ID})
	ok(t, l, "tasks.resume", map[string]any{"id": tk.ID})
	l.result(t, "tasks.get", map[string]any{"id": tk.ID}, &got)
	assert.Equal(t, "stopped", got.Status)
}

func TestTasksFailures(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/plain")

	for _, tc := range []struct {
		name, goal string
		timeoutMs  int
		error      string
	}{
		{"unknown step", "Read the current page title", 0, "Cannot plan step"},
		{"bad type step", "type #q hello", 0, `type <selector> "<text>"`},
		{"failing step", "click #missing", 0, "No element matches"},
		{"fail step", "fail on purpose", 0, "on purpose"},
		{"timeout", "wait 60000", 300, "Task timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := map[string]any{"goal": tc.goal}
			if tc.timeoutMs > 0 {
				payload["timeoutMs"] = tc.timeoutMs
			}
			tk := startTask(t, l, payload)
			final := waitTask(t, l, tk.ID)
			assert.Equal(t, "failed", final.Status)
			assert.Contains(t, final.Error, tc.error)
		})
	}

	for _, tc := range []struct {
		name    string
		payload map[string]any
		error   string
	}{
		{"no goal", map[string]any{}, "goal is required"},
		{"relative attachment", map[string]any{"goal": "extract", "attachments": []any{
			map[string]any{"id": "cv", "name": "cv.pdf", "path": "cv.pdf"},
		}}, "must be absolute"},
		{"bad timeout", map[string]any{"goal": "extract", "timeoutMs": -1}, "timeoutMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := l.call(t, "tasks.start", tc.payload)
			require.NotNil(t, r.Error, "%s", r.raw)
			assert.Contains(t, *r.Error, tc.error)
		})
	}

	r := l.call(t, "tasks.get", map[string]any{"id": "task-none"})
	require.Nil(t, r.Error)
	assert.JSONEq(t, "null", string(r.Result))
	for _, typ := range []string{"tasks.stop", "tasks.pause", "tasks.resume", "tasks.confirm"} {
		r := l.call(t, typ, map[string]any{"id": "task-none"})
		require.NotNil(t, r.Error, typ)
		assert.Equal(t, "Task not found: task-none", *r.Error)
	}
}

func TestTasksAttachmentsKept(t *testing.T) {
	fx := getFixture(t)
	l := fx.native(t)
	open(t, fx, l, "/plain")
	tk := startTask(t, l, map[string]any{"goal": "extract #text", "attachments": []any{
		map[string]any{"id": "cv", "name": "cv.pdf", "path": "/tmp/cv.pdf", "mimeType": "application/pdf"},
	}})
	var raw json.RawMessage
	l.result(t, "tasks.get", map[string]any{"id": tk.ID}, &raw)
	assert.Contains(t, string(raw), `"attachments":[{"id":"cv","name":"cv.pdf","path":"/tmp/cv.pdf","mimeType":"application/pdf"}]`)
	waitTask(t, l, tk.ID)
}
