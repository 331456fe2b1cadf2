package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// ActionRequest is what an action handler receives for one operation.
type ActionRequest struct {
	// Operation is the operation's id in the batch.
	Operation string
	// Action is the published action being run.
	Action *Action
	// Input is the operation's input with references resolved. It has been
	// validated against the action's inputSchema, if any; handlers still
	// validate what they use. Decode it with Decode, which refuses
	// duplicate and case-variant keys.
	Input json.RawMessage
	// Started is when the executor started the operation, after pacing:
	// the starts of a batch's operations are at least minIntervalMs apart.
	// (A handler runs a moment later, after references are resolved and
	// the input validated.)
	Started time.Time
}

// ActionHandler runs one action. The result is encoded as JSON (a
// json.RawMessage is used as is). To fail with a message the agent may see,
// return an *[Error]; any other error becomes 500 "internal" with a generic
// message. ctx ends with the batch deadline and carries what the handler's
// context hook put in it (the session).
//
// ServeAction may be called concurrently for independent operations.
type ActionHandler interface {
	ServeAction(ctx context.Context, req *ActionRequest) (any, error)
}

// ActionFunc adapts a function to [ActionHandler].
type ActionFunc func(ctx context.Context, req *ActionRequest) (any, error)

// ServeAction calls f(ctx, req).
func (f ActionFunc) ServeAction(ctx context.Context, req *ActionRequest) (any, error) {
	return f(ctx, req)
}

// Limiter paces operation starts across the batches of one session, on top
// of each batch's own pacing. Wait blocks until an operation of the session
// may start. It returns ctx's error when ctx ends first, or an *[Error] (such
// as 429 rate_limited) to refuse the operation.
type Limiter interface {
	Wait(ctx context.Context, session string) error
}

type sessionKey struct{}

// session is what [WithSessionKey] and [WithAnonymousSessionKey] store.
type session struct {
	key       string
	anonymous bool
}

// WithSessionKey returns a context carrying the key of the caller's session.
// A handler's context hook sets it; idempotency keys and the [Limiter] are
// scoped by it. Use [WithAnonymousSessionKey] for a session anyone can get
// without signing in.
func WithSessionKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session{key: key})
}

// WithAnonymousSessionKey is [WithSessionKey] for a session that costs a
// client nothing to get (a cookie handed to any visitor): a [Handler] then
// also paces the request by its client address, and charges its stored
// idempotent responses to that address (see [AddressPacing]), so that
// minting fresh sessions does not escape pacing or the store's per-client
// share.
func WithAnonymousSessionKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKey{}, session{key: key, anonymous: true})
}

// SessionKey returns the session key [WithSessionKey] or
// [WithAnonymousSessionKey] stored in ctx, or "".
func SessionKey(ctx context.Context) string {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s.key
}

func sessionOf(ctx context.Context) session {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s
}

type scopeKey struct{}

// pacingScopes are the keys a batch's operation starts are paced by: the
// session (or the client address for a request without one) and, when
// address pacing applies, the client address as well.
type pacingScopes struct {
	session, address string
}

// withScopes records the keys a [Handler] paces by.
func withScopes(ctx context.Context, s *pacingScopes) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopesOf returns the keys the [Limiter] is called with.
func scopesOf(ctx context.Context) pacingScopes {
	if s, ok := ctx.Value(scopeKey{}).(*pacingScopes); ok {
		return *s
	}
	return pacingScopes{session: SessionKey(ctx)}
}

// Executor runs plans: independent operations concurrently up to the plan's
// MaxConcurrency, at least MinIntervalMs apart, references resolved from
// earlier results, inputs with references validated once resolved, and no
// operation started after one has failed.
//
// The zero value has no handlers. An Executor is safe for concurrent use once
// configured; its fields must not change while it runs.
type Executor struct {
	// Handlers maps action names to handlers.
	Handlers map[string]ActionHandler
	// Deadline bounds a whole batch; 0 means [DefaultDeadline] (30 s).
	Deadline time.Duration
	// MaxResultBytes bounds the serialized results of one batch, counted as
	// in the response's results member (each id, its result and the
	// punctuation); 0 means [DefaultMaxResultBytes] (1 MB). An operation whose
	// result would exceed it fails with result_too_large.
	MaxResultBytes int
	// Limiter, if set, paces starts across the batches of a session (the
	// key from SessionKey(ctx); a [Handler] passes the client address for
	// requests without a session, and calls it a second time with the
	// client address where [AddressPacing] says so).
	Limiter Limiter
	// Logger receives the errors of handlers that are reported to the
	// client as "internal" (handlers must keep secrets out of their error
	// strings); nil discards them.
	Logger *slog.Logger
}

// Outcome is the result of running a plan. Slices are indexed like
// Plan.Operations.
type Outcome struct {
	Plan *Plan
	// Results holds each successful operation's result; nil otherwise.
	Results []json.RawMessage
	// Errors holds each failed operation's error; nil otherwise.
	Errors []*Error
	// Skipped lists, in list order, the ids of operations never started.
	Skipped []string
	// Err is the first failure in time (its Operation names the operation,
	// "" for the batch deadline); nil when every operation succeeded.
	Err *Error

	executed bool // some operation was handed to its handler
}

// OK reports whether every operation succeeded.
func (o *Outcome) OK() bool { return o.Err == nil }

// Result returns the result of the operation with the given id, or nil.
func (o *Outcome) Result(id string) json.RawMessage {
	for i := range o.Plan.Operations {
		if o.Plan.Operations[i].ID == id {
			return o.Results[i]
		}
	}
	return nil
}

type completion struct {
	index  int
	result json.RawMessage
	err    *Error
}

// Run executes p. It returns when every started operation has finished; no
// goroutine outlives it. Handlers get a context derived from ctx that ends
// at the batch deadline. Run never returns a nil [Outcome].
func (e *Executor) Run(ctx context.Context, p *Plan) *Outcome {
	deadline := e.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	maxResults := e.MaxResultBytes
	if maxResults <= 0 {
		maxResults = DefaultMaxResultBytes
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	n := len(p.Operations)
	out := &Outcome{Plan: p, Results: make([]json.RawMessage, n), Errors: make([]*Error, n)}
	interval := time.Duration(p.Pacing.MinIntervalMs) * time.Millisecond
	conc := max(p.Pacing.MaxConcurrency, 1)
	scopes := scopesOf(ctx)
	trees := newResultTrees(p)

	var (
		started, finished uint64
		running           int
		totalBytes        int
		lastStart         time.Time
		timer             *time.Timer
		// watching is true until the coordinator has seen ctx end; its
		// Done channel is only made for a select (a batch run inline,
		// without pacing, makes none).
		watching = true
		// doneCh is made for the first operation on a goroutine of its own
		// (or refused by the Limiter): a batch run inline needs none.
		doneCh chan completion
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	complete := func(c completion) {
		running--
		finished |= 1 << c.index
		if c.err == nil {
			// What the result adds to the envelope's results member: "id":result,
			size := len(p.Operations[c.index].ID) + len(`"":,`) + len(c.result)
			if totalBytes+size > maxResults {
				c.err = opErrorf(CodeResultTooLarge, p.Operations[c.index].ID, "The result is too large.")
			} else {
				totalBytes += size
				out.Results[c.index] = c.result
			}
		}
		if c.err != nil {
			c.err.Operation = p.Operations[c.index].ID
			out.Errors[c.index] = c.err
			if out.Err == nil {
				out.Err = c.err
			}
		}
	}
	drain := func() {
		for {
			select {
			case c := <-doneCh:
				complete(c)
			default:
				return
			}
		}
	}
	for {
		if watching && ctx.Err() != nil {
			watching = false // the deadline passed while the coordinator was busy
		}
		if out.Err == nil && watching && running < conc {
			next := -1
			for i := 0; i < n; i++ {
				if started&(1<<i) == 0 && p.Operations[i].deps&^finished == 0 {
					next = i
					break
				}
			}
			if next >= 0 {
				if interval > 0 && !lastStart.IsZero() {
					if wait := time.Until(lastStart.Add(interval)); wait > 0 {
						if timer == nil {
							timer = time.NewTimer(wait)
						} else {
							timer.Reset(wait)
						}
						select {
						case <-timer.C:
						case c := <-doneCh:
							timer.Stop()
							complete(c)
						case <-ctx.Done():
							timer.Stop()
							watching = false
						}
						continue
					}
				}
				if e.Limiter != nil {
					if err := e.wait(ctx, scopes); err != nil {
						started |= 1 << next
						running++
						if doneCh == nil {
							doneCh = make(chan completion, n)
						}
						doneCh <- completion{index: next, err: e.asError(ctx, p.Operations[next].ID, err)}
						continue
					}
					drain()
					if out.Err != nil {
						continue
					}
				}
				started |= 1 << next
				lastStart = time.Now()
				out.executed = true
				if running == 0 && (conc == 1 || !anotherReady(p, next, started, finished)) {
					// Nothing runs beside it and nothing can start until it
					// ends (only its completion can make another operation
					// ready): run it on this goroutine. A goroutine would only
					// add its start and the growth of a fresh stack.
					running++
					complete(e.runOne(ctx, p, out.Results, trees, next, lastStart))
					continue
				}
				running++
				if doneCh == nil {
					doneCh = make(chan completion, n)
				}
				go e.runTo(ctx, doneCh, p, out.Results, trees, next, lastStart)
				continue
			}
		}
		if running == 0 {
			break
		}
		select {
		case c := <-doneCh:
			complete(c)
		case <-doneIf(ctx, watching):
			watching = false
		}
	}
	if !watching && out.Err == nil && started != 1<<n-1 {
		out.Err = timeoutError(ctx)
	}
	for i := range p.Operations {
		if started&(1<<i) == 0 {
			out.Skipped = append(out.Skipped, p.Operations[i].ID)
		}
	}
	return out
}

// doneIf returns ctx.Done(), or nil (a channel that never fires) when
// watching is false.
func doneIf(ctx context.Context, watching bool) <-chan struct{} {
	if watching {
		return ctx.Done()
	}
	return nil
}

// anotherReady reports whether an operation other than next, not started,
// has all its dependencies finished.
func anotherReady(p *Plan, next int, started, finished uint64) bool {
	for i := range p.Operations {
		if i != next && started&(1<<i) == 0 && p.Operations[i].deps&^finished == 0 {
			return true
		}
	}
	return false
}

// runTo runs operation i on a goroutine of its own and sends its
// completion to done.
func (e *Executor) runTo(ctx context.Context, done chan<- completion, p *Plan, results []json.RawMessage, trees resultTrees, i int, started time.Time) {
	done <- e.runOne(ctx, p, results, trees, i, started)
}

// resultTrees holds the results of a run decoded for references: each is
// decoded once however many operations and references name it. Operations
// running at once share it; the trees are only read. It is nil when no
// operation has references.
type resultTrees []resultTree

type resultTree struct {
	once     sync.Once
	tree     any
	rawReads atomic.Int32
}

// maxRawPathReads is how many paths into one result a run reads from its
// text (see rawPath) before it decodes the result instead.
const maxRawPathReads = 8

// rawRead counts a read of result i from its text; it reports false once
// the result has been read so maxRawPathReads times.
func (t resultTrees) rawRead(i int) bool { return t[i].rawReads.Add(1) <= maxRawPathReads }

func newResultTrees(p *Plan) resultTrees {
	for i := range p.Operations {
		if p.Operations[i].HasReferences {
			return make(resultTrees, len(p.Operations))
		}
	}
	return nil
}

// get returns result i decoded; result is its JSON, which has not changed
// since the operation finished, before any operation that references it
// started.
func (t resultTrees) get(i int, result json.RawMessage) any {
	r := &t[i]
	r.once.Do(func() { r.tree, _ = decodeTree(result) })
	return r.tree
}

// wait waits for the [Limiter]'s slot in each scope.
func (e *Executor) wait(ctx context.Context, scopes pacingScopes) error {
	if err := e.Limiter.Wait(ctx, scopes.session); err != nil {
		return err
	}
	if scopes.address != "" && scopes.address != scopes.session {
		return e.Limiter.Wait(ctx, scopes.address)
	}
	return nil
}

func timeoutError(ctx context.Context) *Error {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return errorf(CodeTimeout, "The batch deadline passed.")
	}
	return errorf(CodeTimeout, "The batch was canceled.")
}

// runOne runs operation i. results holds the results of finished operations
// and is only read for i's dependencies, which finished before i started.
// trees decodes those results for references; it is nil when no operation
// has any.
func (e *Executor) runOne(ctx context.Context, p *Plan, results []json.RawMessage, trees resultTrees, i int, started time.Time) (c completion) {
	c.index = i
	op := &p.Operations[i]
	input := op.Input
	if op.HasReferences {
		src := func(id, rest string, dotted bool) (any, bool) {
			for j := range p.Operations {
				if p.Operations[j].ID == id {
					// A path into a result is read from its text: only the
					// value named is decoded. A result read that way more
					// than maxRawPathReads times in a run (each read scans
					// it) is decoded once instead.
					if dotted && len(results[j]) <= maxRawPathBytes && trees.rawRead(j) {
						if v, found, ok := rawPath(results[j], rest); ok {
							return v, found
						}
					}
					return walkPath(trees.get(j, results[j]), rest, dotted)
				}
			}
			return walkPath(nil, rest, dotted)
		}
		text := input
		if op.tree == nil && op.refText != nil {
			text = op.refText
		}
		resolved, bad, err := resolveFrom(text, op.tree, src)
		switch {
		case errors.Is(err, errResolvedTooLarge):
			c.err = errorf(CodePayloadTooLarge, fmt.Sprintf("The resolved input exceeds %d characters.", MaxInputChars))
			return c
		case err != nil:
			c.err = internalError()
			return c
		case bad != nil:
			c.err = errorf(CodeUnresolvedReference, "A $ref did not resolve: "+truncate(bad.String(), 120))
			return c
		}
		if len(resolved) > MaxInputChars && utf8.RuneCount(resolved) > MaxInputChars {
			c.err = errorf(CodePayloadTooLarge, fmt.Sprintf("The resolved input exceeds %d characters.", MaxInputChars))
			return c
		}
		if op.Action.input != nil {
			if problems := validateInput(op.Action.input, resolved); len(problems) > 0 {
				c.err = errorf(CodeInvalidInput, inputProblemMessage(problems))
				return c
			}
		}
		input = resolved
	}
	h := e.Handlers[op.Action.Name]
	if h == nil {
		c.err = internalError()
		e.log(ctx, "webagents: no handler for action", op, nil)
		return c
	}
	result, err := e.call(ctx, h, &ActionRequest{Operation: op.ID, Action: op.Action, Input: input, Started: started})
	if err != nil {
		c.err = e.asError(ctx, op.ID, err)
		if c.err.Code == CodeInternal {
			e.log(ctx, "webagents: action failed", op, err)
		}
		return c
	}
	c.result, err = encodeResult(result)
	if err != nil {
		c.err = internalError()
		e.log(ctx, "webagents: action result cannot be encoded", op, err)
	}
	return c
}

func (e *Executor) call(ctx context.Context, h ActionHandler, req *ActionRequest) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e.Logger != nil {
				e.Logger.ErrorContext(ctx, "webagents: action panicked",
					slog.String("operation", req.Operation), slog.String("action", req.Action.Name),
					slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			}
			result, err = nil, errPanic
		}
	}()
	return h.ServeAction(ctx, req)
}

var errPanic = errors.New("action handler panicked")

// asError maps a handler's or limiter's error to a protocol error.
func (e *Executor) asError(ctx context.Context, op string, err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		c := *we
		c.Status = we.HTTPStatus()
		if c.Code == "" {
			c.Code = CodeInternal
		}
		c.Operation = op
		return &c
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return timeoutError(ctx)
	}
	return internalError()
}

func (e *Executor) log(ctx context.Context, msg string, op *PlannedOperation, err error) {
	if e.Logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("operation", op.ID), slog.String("action", op.Action.Name)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	e.Logger.LogAttrs(ctx, slog.LevelError, msg, attrs...)
}

func encodeResult(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case json.RawMessage:
		if t == nil {
			return json.RawMessage("null"), nil
		}
		if !validJSON(t) {
			return nil, errors.New("invalid JSON result")
		}
		return t, nil
	case nil:
		return json.RawMessage("null"), nil
	}
	return json.Marshal(v)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Decode decodes the input into v, refusing duplicate and case-variant keys
// (which a schema validator and encoding/json would read differently). It
// returns a 400 invalid_input *[Error].
func (r *ActionRequest) Decode(v any) error {
	if err := strictjson.Unmarshal(r.Input, v); err != nil {
		return &Error{Status: 400, Code: CodeInvalidInput, Message: "The input does not have the expected shape."}
	}
	return nil
}
