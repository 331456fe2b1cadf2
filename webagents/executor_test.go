package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a set of action handlers that record when each operation
// starts, relative to a zero time, and can be told to sleep or fail.
type recorder struct {
	mu     sync.Mutex
	zero   time.Time
	starts map[string]time.Duration
	// reqStarted is ActionRequest.Started, relative to zero.
	reqStarted map[string]time.Duration
	sleep      map[string]time.Duration
	fail       map[string]error
	result     map[string]any
	inputs     map[string]string
}

func newRecorder() *recorder {
	return &recorder{zero: time.Now(), starts: map[string]time.Duration{}, reqStarted: map[string]time.Duration{}, sleep: map[string]time.Duration{},
		fail: map[string]error{}, result: map[string]any{}, inputs: map[string]string{}}
}

func (r *recorder) ServeAction(ctx context.Context, req *ActionRequest) (any, error) {
	r.mu.Lock()
	r.starts[req.Operation] = time.Since(r.zero)
	r.reqStarted[req.Operation] = req.Started.Sub(r.zero)
	r.inputs[req.Operation] = string(req.Input)
	sleep, fail, result := r.sleep[req.Operation], r.fail[req.Operation], r.result[req.Operation]
	r.mu.Unlock()
	if sleep > 0 {
		select {
		case <-time.After(sleep):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	if result == nil {
		result = map[string]string{"op": req.Operation}
	}
	return result, nil
}

func (r *recorder) executor(m *Manifest) *Executor {
	handlers := map[string]ActionHandler{}
	for name := range m.Actions {
		handlers[name] = r
	}
	return &Executor{Handlers: handlers}
}

func TestExecutorPacingTimeline(t *testing.T) {
	tests := []struct {
		name    string
		pacing  string
		sleep   time.Duration
		ops     int
		want    []time.Duration // start of each operation, in list order
		comment string
	}{
		{"five reads, 120 ms, 2 at once", `"pacing":{"minIntervalMs":120,"maxConcurrency":2}`, 0, 5,
			[]time.Duration{0, 120, 240, 360, 480}, "the issue's example"},
		{"concurrency limit dominates", `"pacing":{"minIntervalMs":10,"maxConcurrency":2}`, 100 * time.Millisecond, 4,
			[]time.Duration{0, 10, 100, 110}, "third waits for a free slot"},
		{"no pacing, all at once", `"pacing":{"minIntervalMs":0,"maxConcurrency":4}`, 50 * time.Millisecond, 4,
			[]time.Duration{0, 0, 0, 0}, ""},
		{"serial", `"parallel":false`, 30 * time.Millisecond, 3,
			[]time.Duration{0, 30, 60}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := rwManifest(t, tt.pacing)
				rec := newRecorder()
				var list []string
				for i := 0; i < tt.ops; i++ {
					id := "o" + string(rune('a'+i))
					list = append(list, `{"id":"`+id+`","action":"r"}`)
					rec.sleep[id] = tt.sleep
				}
				p := mustPlan(t, m, ops(list...))
				out := rec.executor(m).Run(t.Context(), p)
				require.True(t, out.OK(), "%v", out.Err)
				for i, want := range tt.want {
					id := p.Operations[i].ID
					assert.Equal(t, want*time.Millisecond, rec.starts[id], "start of %s", id)
					assert.Equal(t, want*time.Millisecond, rec.reqStarted[id], "ActionRequest.Started of %s", id)
				}
			})
		})
	}
}

func TestExecutorDependencyOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"pacing":{"maxConcurrency":4}`)
		rec := newRecorder()
		rec.sleep["find"] = 50 * time.Millisecond
		rec.sleep["other"] = 10 * time.Millisecond
		rec.sleep["add"] = 20 * time.Millisecond
		rec.result["find"] = map[string]any{"results": []any{map[string]any{"productId": "kbd-75"}}}
		p := mustPlan(t, m, ops(`{"id":"find","action":"r"}`, `{"id":"other","action":"r2"}`,
			`{"id":"add","action":"w","input":{"productId":{"$ref":"find.results.0.productId"},"n":2}}`,
			`{"id":"verify","action":"r"}`))
		out := rec.executor(m).Run(t.Context(), p)
		require.True(t, out.OK(), "%v", out.Err)
		assert.Equal(t, time.Duration(0), rec.starts["find"])
		assert.Equal(t, time.Duration(0), rec.starts["other"])
		assert.Equal(t, 50*time.Millisecond, rec.starts["add"], "add waits for find and the earlier reads")
		assert.Equal(t, 70*time.Millisecond, rec.starts["verify"], "verify waits for add")
		assert.JSONEq(t, `{"productId":"kbd-75","n":2}`, rec.inputs["add"])
		assert.JSONEq(t, `{"op":"verify"}`, string(out.Result("verify")))
		assert.Empty(t, out.Skipped)
	})
}

func TestExecutorFailureSkipsRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"pacing":{"maxConcurrency":2}`)
		rec := newRecorder()
		rec.sleep["slow"] = 100 * time.Millisecond
		rec.sleep["bad"] = 10 * time.Millisecond
		rec.fail["bad"] = &Error{Status: 401, Code: "unauthorized", Message: "Sign in first."}
		p := mustPlan(t, m, ops(`{"id":"slow","action":"r"}`, `{"id":"bad","action":"r"}`,
			`{"id":"later","action":"r"}`, `{"id":"after","action":"w"}`))
		out := rec.executor(m).Run(t.Context(), p)
		require.False(t, out.OK())
		assert.Equal(t, CodeUnauthorized, out.Err.Code)
		assert.Equal(t, "bad", out.Err.Operation)
		assert.Equal(t, 401, out.Err.HTTPStatus())
		assert.NotNil(t, out.Result("slow"), "a running operation finishes and keeps its result")
		assert.Nil(t, out.Result("bad"))
		assert.Equal(t, []string{"later", "after"}, out.Skipped)
		assert.NotContains(t, rec.starts, "later")
	})
}

func TestExecutorFirstFailureInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"pacing":{"maxConcurrency":2}`)
		rec := newRecorder()
		rec.sleep["a"] = 50 * time.Millisecond
		rec.sleep["b"] = 10 * time.Millisecond
		rec.fail["a"] = &Error{Status: 409, Code: "conflict", Message: "A failed."}
		rec.fail["b"] = &Error{Status: 404, Code: "not_found", Message: "B failed."}
		p := mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`))
		out := rec.executor(m).Run(t.Context(), p)
		assert.Equal(t, "b", out.Err.Operation, "b failed first in time although a is listed first")
		assert.NotNil(t, out.Errors[0])
		assert.NotNil(t, out.Errors[1])
	})
}

func TestExecutorErrors(t *testing.T) {
	m := rwManifest(t, "")
	tests := []struct {
		name   string
		fail   error
		result any
		code   Code
		status int
		msg    string
	}{
		{"declared error", &Error{Status: 401, Code: "unauthorized", Message: "Sign in first."}, nil, "unauthorized", 401, "Sign in first."},
		{"wrapped declared error", errWrap{&Error{Status: 404, Code: "not_found", Message: "No such product."}}, nil, "not_found", 404, "No such product."},
		{"declared without status", &Error{Code: "rate_limited", Message: "Slow down."}, nil, "rate_limited", 429, "Slow down."},
		{"plain error never leaks", errors.New("pq: password authentication failed for user admin"), nil, CodeInternal, 500, "Internal error."},
		{"unencodable result", nil, map[string]any{"f": func() {}}, CodeInternal, 500, "Internal error."},
		{"invalid raw result", nil, json.RawMessage(`{`), CodeInternal, 500, "Internal error."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			rec.fail["a"] = tt.fail
			rec.result["a"] = tt.result
			out := rec.executor(m).Run(t.Context(), mustPlan(t, m, ops(`{"id":"a","action":"r"}`)))
			require.NotNil(t, out.Err)
			assert.Equal(t, tt.code, out.Err.Code)
			assert.Equal(t, tt.status, out.Err.HTTPStatus())
			assert.Equal(t, tt.msg, out.Err.Message)
			assert.Equal(t, "a", out.Err.Operation)
		})
	}
}

type errWrap struct{ err error }

func (e errWrap) Error() string { return "wrapped: " + e.err.Error() }
func (e errWrap) Unwrap() error { return e.err }

func TestExecutorPanicIsInternal(t *testing.T) {
	m := rwManifest(t, "")
	e := &Executor{Handlers: map[string]ActionHandler{"r": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
		panic("boom")
	})}}
	out := e.Run(t.Context(), mustPlan(t, m, ops(`{"id":"a","action":"r"}`)))
	require.NotNil(t, out.Err)
	assert.Equal(t, CodeInternal, out.Err.Code)
	assert.NotContains(t, out.Err.Message, "boom")
}

func TestExecutorReferences(t *testing.T) {
	m := rwManifest(t, "")
	tests := []struct {
		name  string
		input string
		code  Code // "" means success
	}{
		{"object key", `{"v":{"$ref":"a.items.0.id"}}`, ""},
		{"whole result", `{"$ref":"a"}`, ""},
		{"missing key", `{"v":{"$ref":"a.nope"}}`, CodeUnresolvedReference},
		{"index out of range", `{"v":{"$ref":"a.items.5"}}`, CodeUnresolvedReference},
		{"into a non-container", `{"v":{"$ref":"a.count.x"}}`, CodeUnresolvedReference},
		{"resolved input fails schema", `{"q":{"$ref":"a.count"}}`, CodeInvalidInput},
		{"resolved input passes schema", `{"q":{"$ref":"a.items.0.id"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			rec.result["a"] = map[string]any{"items": []any{map[string]any{"id": "x1"}}, "count": 1}
			action := "r"
			if strings.Contains(tt.input, `"q"`) {
				action = "s"
			}
			p := mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"`+action+`","input":`+tt.input+`}`,
				`{"id":"c","action":"w"}`))
			out := rec.executor(m).Run(t.Context(), p)
			if tt.code == "" {
				require.True(t, out.OK(), "%v", out.Err)
				return
			}
			require.NotNil(t, out.Err)
			assert.Equal(t, tt.code, out.Err.Code)
			assert.Equal(t, "b", out.Err.Operation)
			assert.Equal(t, 400, out.Err.HTTPStatus())
			assert.Equal(t, []string{"c"}, out.Skipped)
		})
	}
}

func TestExecutorResultLimit(t *testing.T) {
	m := rwManifest(t, `"parallel":false`)
	rec := newRecorder()
	rec.result["a"] = strings.Repeat("x", 600)
	rec.result["b"] = strings.Repeat("y", 600)
	e := rec.executor(m)
	e.MaxResultBytes = 1000
	out := e.Run(t.Context(), mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`, `{"id":"c","action":"r"}`)))
	require.NotNil(t, out.Err)
	assert.Equal(t, CodeResultTooLarge, out.Err.Code)
	assert.Equal(t, "b", out.Err.Operation)
	assert.Equal(t, 500, out.Err.HTTPStatus())
	assert.NotNil(t, out.Result("a"))
	assert.Equal(t, []string{"c"}, out.Skipped)
}

func TestExecutorDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"parallel":false`)
		rec := newRecorder()
		rec.sleep["a"] = 10 * time.Second
		e := rec.executor(m)
		e.Deadline = time.Second
		start := time.Now()
		out := e.Run(t.Context(), mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`)))
		assert.Equal(t, time.Second, time.Since(start), "the handler's context ends at the deadline")
		require.NotNil(t, out.Err)
		assert.Equal(t, CodeTimeout, out.Err.Code)
		assert.Equal(t, 504, out.Err.HTTPStatus())
		assert.Equal(t, []string{"b"}, out.Skipped)
	})
}

func TestExecutorDeadlineWhilePacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"pacing":{"minIntervalMs":2000,"maxConcurrency":1}`)
		rec := newRecorder()
		e := rec.executor(m)
		e.Deadline = time.Second
		out := e.Run(t.Context(), mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`)))
		require.NotNil(t, out.Err)
		assert.Equal(t, CodeTimeout, out.Err.Code)
		assert.Empty(t, out.Err.Operation, "the batch deadline, not an operation, failed")
		assert.Equal(t, []string{"b"}, out.Skipped)
	})
}

func TestSessionLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := rwManifest(t, `"pacing":{"maxConcurrency":4}`)
		rec := newRecorder()
		e := rec.executor(m)
		e.Limiter = &SessionLimiter{Interval: 100 * time.Millisecond, MaxWait: 250 * time.Millisecond}
		ctx := WithSessionKey(t.Context(), "s1")
		out := e.Run(ctx, mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`)))
		require.True(t, out.OK())
		assert.Equal(t, 100*time.Millisecond, rec.starts["b"], "paced across the session")
		// The next batch of the same session keeps pacing from where the last ended.
		rec2 := newRecorder()
		e.Handlers = rec2.executor(m).Handlers
		out = e.Run(ctx, mustPlan(t, m, ops(`{"id":"c","action":"r"}`, `{"id":"d","action":"r"}`)))
		require.True(t, out.OK())
		assert.Equal(t, 100*time.Millisecond, rec2.starts["c"])
		assert.Equal(t, 200*time.Millisecond, rec2.starts["d"])
		// Another session is not slowed down.
		rec3 := newRecorder()
		e.Handlers = rec3.executor(m).Handlers
		out = e.Run(WithSessionKey(t.Context(), "s2"), mustPlan(t, m, ops(`{"id":"g","action":"r"}`)))
		require.True(t, out.OK())
		assert.Equal(t, time.Duration(0), rec3.starts["g"])
	})
}

func TestActionRequestDecode(t *testing.T) {
	var v struct {
		Token string `json:"token"`
	}
	req := &ActionRequest{Input: json.RawMessage(`{"token":"a"}`)}
	require.NoError(t, req.Decode(&v))
	assert.Equal(t, "a", v.Token)
	req.Input = json.RawMessage(`{"Token":"b"}`)
	err := req.Decode(&v)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeInvalidInput, e.Code)
}

func TestSessionLimiterRefusesLongWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &SessionLimiter{Interval: 100 * time.Millisecond, MaxWait: 150 * time.Millisecond}
		require.NoError(t, l.Wait(t.Context(), "s"), "first start is immediate")
		done := make(chan error, 1)
		go func() { done <- l.Wait(t.Context(), "s") }() // waits 100 ms
		synctest.Wait()
		err := l.Wait(t.Context(), "s") // would wait 200 ms
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, CodeRateLimited, e.Code)
		assert.Equal(t, time.Second, e.RetryAfter, "50 ms over MaxWait: at least a second")
		assert.NoError(t, <-done)

		long := &SessionLimiter{Interval: 10 * time.Second, MaxWait: 5 * time.Second}
		require.NoError(t, long.Wait(t.Context(), "s"))
		require.ErrorAs(t, long.Wait(t.Context(), "s"), &e) // would wait 10 s
		assert.Equal(t, 5*time.Second, e.RetryAfter, "when the wait is within MaxWait again")

		ctx, cancel := context.WithCancel(t.Context())
		go func() { done <- l.Wait(ctx, "s") }()
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
}

func TestSessionLimiterBoundsSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &SessionLimiter{Interval: time.Second, MaxSessions: 2}
		require.NoError(t, l.Wait(t.Context(), "a"))
		require.NoError(t, l.Wait(t.Context(), "b"))
		var e *Error
		require.ErrorAs(t, l.Wait(t.Context(), "c"), &e, "a third session while two are paced")
		assert.Equal(t, time.Second, e.RetryAfter, "when the first session's slot passes")
		time.Sleep(time.Second)
		assert.NoError(t, l.Wait(t.Context(), "c"), "expired sessions are dropped")
	})
}

func TestExecutorCanceledContextStartsNothing(t *testing.T) {
	m := rwManifest(t, "")
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := rec.executor(m).Run(ctx, mustPlan(t, m, ops(`{"id":"a","action":"r"}`, `{"id":"b","action":"r"}`)))
	require.NotNil(t, out.Err)
	assert.Equal(t, CodeTimeout, out.Err.Code)
	assert.Equal(t, []string{"a", "b"}, out.Skipped)
	assert.Empty(t, rec.starts)
}
