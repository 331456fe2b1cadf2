package webagents

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandlerReservationOutlivesShortWindow: with an idempotency window
// shorter than the batch deadline, the reservation must still hold while
// the batch runs; a retry inside the batch's run is 409, never a second
// run.
func TestHandlerReservationOutlivesShortWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		release := make(chan struct{})
		m := manifestWith(t, "", `{"slow":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"slow": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
			runs.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return 1, nil
		})}, &HandlerOptions{Origin: testOrigin, IdempotencyWindow: time.Second, Deadline: 30 * time.Second})
		require.NoError(t, err)
		body := `{"version":"0.1","operations":[{"id":"x","action":"slow"}]}`
		key := map[string]string{"Idempotency-Key": "k"}
		var wg sync.WaitGroup
		wg.Go(func() { post(h, body, key) })
		time.Sleep(5 * time.Second) // past the window, inside the deadline
		synctest.Wait()
		var retry *httptest.ResponseRecorder
		wg.Go(func() { retry = post(h, body, key) })
		synctest.Wait()
		close(release)
		wg.Wait()
		assert.Equal(t, int32(1), runs.Load(), "the batch ran once")
		assert.Equal(t, http.StatusConflict, retry.Code, retry.Body.String())
	})
}

// slowStore delays Reserve by reserveDelay and blocks Complete until
// unblock is closed (or its context ends), like a Redis that fails after
// the batch ran.
type slowStore struct {
	*MemoryIdempotencyStore
	reserveDelay time.Duration
	unblock      chan struct{}
}

func (s *slowStore) Reserve(ctx context.Context, r IdempotencyReservation) (*IdempotencyRecord, error) {
	time.Sleep(s.reserveDelay)
	return s.MemoryIdempotencyStore.Reserve(ctx, r)
}

func (s *slowStore) Complete(ctx context.Context, r IdempotencyReservation, rec IdempotencyRecord) error {
	if s.unblock != nil {
		select {
		case <-s.unblock:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryIdempotencyStore.Complete(ctx, r, rec)
}

// answerWriter signals when the response has been written and flushed.
type answerWriter struct {
	*httptest.ResponseRecorder
	once     sync.Once
	answered chan struct{}
}

func (w *answerWriter) Flush() {
	w.ResponseRecorder.Flush()
	w.once.Do(func() { close(w.answered) })
}

// TestHandlerAnswersWhileCompleteIsSlow: a store that cannot complete (Redis
// failing after the batch ran, Complete retrying) must not hold the answer
// past the batch deadline. The response is still stored once the store
// recovers, so a later retry is a replay.
func TestHandlerAnswersWhileCompleteIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowStore{MemoryIdempotencyStore: NewMemoryIdempotencyStore(nil), unblock: make(chan struct{})}
		var runs atomic.Int32
		m := manifestWith(t, "", `{"a":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			runs.Add(1)
			return 1, nil
		})}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: store, Deadline: 5 * time.Second})
		require.NoError(t, err)
		body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
		req := httptest.NewRequest(http.MethodPost, testOrigin+"/api/agent/workflow", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k")
		w := &answerWriter{ResponseRecorder: httptest.NewRecorder(), answered: make(chan struct{})}
		served := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(served)
			h.ServeHTTP(w, req)
		}()
		select {
		case <-w.answered:
		case <-served:
		case <-time.After(time.Minute):
		}
		assert.LessOrEqual(t, time.Since(start), 5*time.Second, "answered within the batch deadline")
		close(store.unblock)
		<-served
		assert.Equal(t, 200, w.Code, w.Body.String())
		again := post(h, body, map[string]string{"Idempotency-Key": "k"})
		assert.Equal(t, "true", again.Header().Get("Idempotent-Replayed"), "stored once the store recovered")
		assert.Equal(t, int32(1), runs.Load())
	})
}

// TestHandlerDeadlineCountsFromReservation: the time a slow store takes to
// reserve comes out of the batch deadline, so the answer still comes
// within the deadline (and the record's Deadline, which retries are told
// to wait for, is when the batch really ends).
func TestHandlerDeadlineCountsFromReservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowStore{MemoryIdempotencyStore: NewMemoryIdempotencyStore(nil), reserveDelay: time.Second}
		m := manifestWith(t, "", `{"slow":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"slow": ActionFunc(func(ctx context.Context, _ *ActionRequest) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: store, Deadline: 2 * time.Second})
		require.NoError(t, err)
		start := time.Now()
		rec := post(h, `{"version":"0.1","operations":[{"id":"x","action":"slow"}]}`, map[string]string{"Idempotency-Key": "k"})
		assert.Equal(t, 2*time.Second, time.Since(start))
		assert.Equal(t, 504, rec.Code)
		assert.Equal(t, CodeTimeout, decodeEnvelope(t, rec).Code)
	})
}

// failingComplete is a store that can never store a response.
type failingComplete struct{ *MemoryIdempotencyStore }

func (failingComplete) Complete(context.Context, IdempotencyReservation, IdempotencyRecord) error {
	return errors.New("store down")
}

// TestHandlerStuckKeyBacksOff: a key whose batch ended without its
// response stored stays in progress for the window (never runs twice), and
// its 409 no longer tells the client to poll every second for the whole
// window: Retry-After grows with the time since the batch's deadline, up
// to a batch deadline.
func TestHandlerStuckKeyBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		m := manifestWith(t, "", `{"a":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			runs.Add(1)
			return 1, nil
		})}, &HandlerOptions{Origin: testOrigin, Deadline: 30 * time.Second,
			IdempotencyStore: failingComplete{NewMemoryIdempotencyStore(nil)},
		})
		require.NoError(t, err)
		body := `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`
		key := map[string]string{"Idempotency-Key": "k"}
		require.Equal(t, 200, post(h, body, key).Code)
		retry := post(h, body, key)
		assert.Equal(t, http.StatusConflict, retry.Code)
		assert.Equal(t, "30", retry.Header().Get("Retry-After"), "inside the deadline: until it")
		time.Sleep(40 * time.Second)
		retry = post(h, body, key)
		assert.Equal(t, http.StatusConflict, retry.Code)
		assert.Equal(t, "10", retry.Header().Get("Retry-After"), "10 s past the deadline")
		time.Sleep(time.Hour)
		retry = post(h, body, key)
		assert.Equal(t, http.StatusConflict, retry.Code, "still never run twice")
		assert.Equal(t, "30", retry.Header().Get("Retry-After"), "at most a batch deadline")
		assert.Equal(t, int32(1), runs.Load())
	})
}

// badStatusStore replays a record whose status net/http cannot send.
type badStatusStore struct {
	*MemoryIdempotencyStore
	status int
}

func (s badStatusStore) Reserve(context.Context, IdempotencyReservation) (*IdempotencyRecord, error) {
	return &IdempotencyRecord{Fingerprint: sha256.Sum256([]byte(oneOp)), Completed: true, Status: s.status, Body: []byte("{}")}, nil
}

const oneOp = `{"version":"0.1","operations":[{"id":"x","action":"a"}]}`

// TestHandlerReplayBadStatus: a stored status outside what HTTP can carry
// is a store failure (500), not a panic that leaves the client without an
// answer.
func TestHandlerReplayBadStatus(t *testing.T) {
	for _, status := range []int{0, 42, 1000, -200} {
		m := manifestWith(t, "", `{"a":{}}`)
		h, err := NewHandler(m, map[string]ActionHandler{"a": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return 1, nil })}, &HandlerOptions{Origin: testOrigin, IdempotencyStore: badStatusStore{NewMemoryIdempotencyStore(nil), status}})
		require.NoError(t, err)
		var rec *httptest.ResponseRecorder
		require.NotPanics(t, func() { rec = post(h, oneOp, map[string]string{"Idempotency-Key": "k"}) }, "status %d", status)
		assert.Equal(t, 500, rec.Code)
		assert.Equal(t, CodeInternal, decodeEnvelope(t, rec).Code)
	}
}
