package webagents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingStore is a memory store that keeps what was completed.
type recordingStore struct {
	MemoryIdempotencyStore
	mu        sync.Mutex
	completed []IdempotencyRecord
}

func (s *recordingStore) Complete(ctx context.Context, r IdempotencyReservation, rec IdempotencyRecord) error {
	s.mu.Lock()
	s.completed = append(s.completed, rec)
	s.mu.Unlock()
	return s.MemoryIdempotencyStore.Complete(ctx, r, rec)
}

func (s *recordingStore) records() []IdempotencyRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]IdempotencyRecord(nil), s.completed...)
}

// cartSite is a Handler over real loopback HTTP whose cart.add blocks
// until the test lets it go, so that a client can go away mid-batch.
type cartSite struct {
	h        *Handler
	srv      *httptest.Server
	store    *recordingStore
	gate     chan struct{} // each cart.add takes one token
	started  chan string   // the id of each operation as it starts
	requests chan *http.Request
	served   chan struct{} // one value per request ServeHTTP returned from

	mu    sync.Mutex
	cart  int
	cause error // the context cause an action saw, if its context ended
}

func newCartSite(t *testing.T, opts *HandlerOptions) *cartSite {
	t.Helper()
	s := &cartSite{
		store:    &recordingStore{},
		gate:     make(chan struct{}, 16),
		started:  make(chan string, 16),
		requests: make(chan *http.Request, 16),
		served:   make(chan struct{}, 16),
	}
	m := manifestWith(t, `"pacing":{"minIntervalMs":0,"maxConcurrency":1}`, `{"cart.add":{"effect":"write"},"cart.state":{}}`)
	s.srv = httptest.NewUnstartedServer(nil)
	o := HandlerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Origin = "http://" + s.srv.Listener.Addr().String()
	o.IdempotencyStore = s.store
	actions := map[string]ActionHandler{
		"cart.add": ActionFunc(func(ctx context.Context, req *ActionRequest) (any, error) {
			s.started <- req.Operation
			select {
			case <-s.gate:
			case <-ctx.Done():
				s.mu.Lock()
				s.cause = context.Cause(ctx)
				s.mu.Unlock()
				return nil, ctx.Err()
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.cart++
			return map[string]int{"quantity": s.cart}, nil
		}),
		"cart.state": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return map[string]int{"quantity": s.cart}, nil
		}),
	}
	h, err := NewHandler(m, actions, &o)
	require.NoError(t, err)
	s.h = h
	s.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests <- r
		h.ServeHTTP(w, r)
		s.served <- struct{}{}
	})
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// fourAdds is issue 12's batch: four writes, then a read.
const fourAdds = `{"version":"0.1","operations":[
 {"id":"a1","action":"cart.add"},{"id":"a2","action":"cart.add","dependsOn":["a1"]},
 {"id":"a3","action":"cart.add","dependsOn":["a2"]},{"id":"a4","action":"cart.add","dependsOn":["a3"]},
 {"id":"state","action":"cart.state","dependsOn":["a4"]}]}`

func (s *cartSite) send(ctx context.Context, key string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.srv.URL+"/api/agent/workflow", strings.NewReader(fourAdds))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func (s *cartSite) quantity() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cart
}

// dropMidBatch sends the four adds and closes the client's connection once
// two of them have run and the third has started; it returns the server's
// view of the request, whose context has ended by then.
func (s *cartSite) dropMidBatch(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, _, err := s.send(ctx, key)
		errc <- err
	}()
	r := <-s.requests
	for range 2 {
		<-s.started
		s.gate <- struct{}{}
	}
	assert.Equal(t, "a3", <-s.started)
	cancel() // the client gives up: its connection closes
	assert.ErrorIs(t, <-errc, context.Canceled)
	<-r.Context().Done() // the server has seen it go
	for range 2 {
		s.gate <- struct{}{}
	}
}

// TestHandlerClientDropKeyed is issue 12 defect 1: a client that goes away
// mid-batch no longer cuts it short; the completed response is stored under
// the key, a retry while it runs gets 409 with Retry-After, and a retry
// afterwards gets the stored, complete response.
func TestHandlerClientDropKeyed(t *testing.T) {
	s := newCartSite(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, _, err := s.send(ctx, `"k1"`)
		errc <- err
	}()
	r := <-s.requests
	for range 2 {
		<-s.started
		s.gate <- struct{}{}
	}
	assert.Equal(t, "a3", <-s.started)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	<-r.Context().Done()

	// A retry while the batch runs: 409, come back when it must be over.
	go func() { <-s.requests }()
	resp, body, err := s.send(t.Context(), `"k1"`)
	require.NoError(t, err)
	<-s.served
	assert.Equal(t, http.StatusConflict, resp.StatusCode, string(body))
	retryAfter, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retryAfter >= 1 && retryAfter <= 30, "Retry-After %d within the 30 s deadline", retryAfter)

	for range 2 {
		s.gate <- struct{}{}
	}
	<-s.served // the dropped request's batch has finished
	assert.Equal(t, 4, s.quantity(), "every write ran")
	recs := s.store.records()
	require.Len(t, recs, 1)
	assert.Equal(t, http.StatusOK, recs[0].Status)
	var stored Response
	require.NoError(t, json.Unmarshal(recs[0].Body, &stored))
	assert.True(t, stored.OK)
	assert.JSONEq(t, `{"quantity":4}`, string(stored.Results["state"]))

	go func() { <-s.requests }()
	resp, body, err = s.send(t.Context(), `"k1"`)
	require.NoError(t, err)
	<-s.served
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, string(recs[0].Body), string(body), "the stored response, complete")
	assert.Equal(t, 4, s.quantity(), "the retry ran nothing")
}

// TestHandlerClientDropUnkeyed: without a key, a dropped client does not cut
// the batch short either.
func TestHandlerClientDropUnkeyed(t *testing.T) {
	s := newCartSite(t, nil)
	s.dropMidBatch(t, "")
	<-s.served
	assert.Equal(t, 4, s.quantity(), "every write ran")
	assert.Empty(t, s.store.records())
}

// TestHandlerShutdownWaits: Shutdown refuses new batches and waits for the
// running one, which completes and is stored.
func TestHandlerShutdownWaits(t *testing.T) {
	s := newCartSite(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _, _, _ = s.send(ctx, "k") }()
	<-s.requests
	<-s.started
	shut := make(chan error, 1)
	go func() { shut <- s.h.Shutdown(t.Context()) }()

	// A new batch is refused while the first drains.
	var resp *http.Response
	var body []byte
	require.Eventually(t, func() bool {
		go func() { <-s.requests }()
		var err error
		resp, body, err = s.send(t.Context(), "")
		<-s.served
		return err == nil && resp.StatusCode == http.StatusServiceUnavailable
	}, 5*time.Second, time.Millisecond)
	var r Response
	require.NoError(t, json.Unmarshal(body, &r))
	assert.Equal(t, CodeUnavailable, r.Code)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a batch running", err)
	default:
	}
	for range 4 {
		s.gate <- struct{}{}
	}
	assert.NoError(t, <-shut)
	<-s.served
	assert.Equal(t, 4, s.quantity())
	require.Len(t, s.store.records(), 1)
	assert.Equal(t, http.StatusOK, s.store.records()[0].Status)
}

// TestHandlerShutdownCancels: past its context, Shutdown cancels the
// running batch, whose handlers see ErrHandlerClosed; the batch answers
// 504 with the rest skipped, and that outcome is what a retry replays.
func TestHandlerShutdownCancels(t *testing.T) {
	s := newCartSite(t, nil)
	type result struct {
		resp *http.Response
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, body, err := s.send(t.Context(), "k")
		done <- result{resp, body, err}
	}()
	<-s.requests
	<-s.started
	s.gate <- struct{}{}
	<-s.started // a2 is running
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.h.Shutdown(ctx), context.DeadlineExceeded)
	res := <-done
	require.NoError(t, res.err)
	<-s.served
	assert.Equal(t, http.StatusGatewayTimeout, res.resp.StatusCode)
	var r Response
	require.NoError(t, json.Unmarshal(res.body, &r))
	assert.Equal(t, CodeTimeout, r.Code)
	assert.Equal(t, []string{"a3", "a4", "state"}, r.Skipped)
	assert.Equal(t, 1, s.quantity())
	s.mu.Lock()
	assert.ErrorIs(t, s.cause, ErrHandlerClosed)
	s.mu.Unlock()
	require.Len(t, s.store.records(), 1, "the outcome of what ran is stored")
}

// TestHandlerClose: Close cancels running batches at once and refuses new
// ones; it is idempotent.
func TestHandlerClose(t *testing.T) {
	s := newCartSite(t, nil)
	done := make(chan int, 1)
	go func() {
		resp, _, err := s.send(t.Context(), "")
		if err != nil {
			done <- 0
			return
		}
		done <- resp.StatusCode
	}()
	<-s.requests
	<-s.started
	require.NoError(t, s.h.Close())
	require.NoError(t, s.h.Close())
	assert.Equal(t, http.StatusGatewayTimeout, <-done)
	<-s.served
	go func() { <-s.requests }()
	resp, _, err := s.send(t.Context(), "")
	require.NoError(t, err)
	<-s.served
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NoError(t, s.h.Shutdown(t.Context()), "nothing left to wait for")
	s.mu.Lock()
	assert.True(t, errors.Is(s.cause, ErrHandlerClosed), fmt.Sprint(s.cause))
	s.mu.Unlock()
}
