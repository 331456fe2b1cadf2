package redisstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/agentbridge/agentbridge/webagents"
)

// fleet is three Handler instances on three loopback servers, sharing one
// Redis and one database (the site's state: orders placed, operation
// starts), as instances behind a load balancer do.
type fleet struct {
	servers []*httptest.Server
	stores  []*Store

	mu      sync.Mutex
	orders  map[string]int         // per order key in the input
	starts  map[string][]time.Time // ActionRequest.Started per session
	release chan struct{}          // order.place waits for it when set
	placing chan struct{}
}

type fleetOptions struct {
	interval time.Duration
	maxWait  time.Duration // the limiter's MaxWait; 0 is its default
	block    bool
	logger   *slog.Logger
	// store is each instance's store options; nil: no per-client bound
	// (every request comes from one address).
	store *Options
}

func newFleet(t *testing.T, srv *redisServer, o fleetOptions) *fleet {
	f := &fleet{orders: map[string]int{}, starts: map[string][]time.Time{}}
	if o.block {
		f.release, f.placing = make(chan struct{}), make(chan struct{}, 8)
	}
	m, err := webagents.ParseManifest([]byte(`{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow",
		"pacing":{"minIntervalMs":0,"maxConcurrency":1}},
		"actions":{"order.place":{"effect":"irreversible"},"ping":{},"large":{}}}`), nil)
	require.NoError(t, err)
	for range 3 {
		rdb := srv.client(t)
		// Every request comes from one address and no session: the
		// tests stand for many clients, not one over its share.
		so := Options{CompleteRetry: 3 * time.Second, MaxClientReservations: -1}
		if o.store != nil {
			so = *o.store
		}
		if so.OpTimeout == 0 {
			so.OpTimeout = healthyBudget // Redis is up, or refuses at once while it is down
		}
		so.Logger = o.logger
		store := NewStore(rdb, &so)
		f.stores = append(f.stores, store)
		var limiter webagents.Limiter
		if o.interval > 0 {
			limiter = NewLimiter(rdb, &LimiterOptions{Interval: o.interval, MaxWait: o.maxWait, OpTimeout: healthyBudget, Logger: o.logger})
		}
		hs := httptest.NewUnstartedServer(nil)
		h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
			"order.place": webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
				var in struct {
					Order string `json:"order"`
				}
				if err := req.Decode(&in); err != nil {
					return nil, err
				}
				f.mu.Lock()
				f.orders[in.Order]++
				n := f.orders[in.Order]
				f.mu.Unlock()
				if f.release != nil {
					f.placing <- struct{}{}
					select {
					case <-f.release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return map[string]any{"order": in.Order, "placed": n}, nil
			}),
			"ping": webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				s := webagents.SessionKey(ctx)
				f.starts[s] = append(f.starts[s], req.Started)
				return "pong", nil
			}),
			"large": webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
				var in struct {
					Bytes int `json:"bytes"`
				}
				if err := req.Decode(&in); err != nil {
					return nil, err
				}
				return strings.Repeat("x", in.Bytes), nil
			}),
		}, &webagents.HandlerOptions{
			Origin:           "http://" + hs.Listener.Addr().String(),
			IdempotencyStore: store,
			Limiter:          limiter,
			Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
				if s := r.Header.Get("X-Session"); s != "" {
					return webagents.WithSessionKey(r.Context(), s), nil
				}
				return r.Context(), nil
			},
		})
		require.NoError(t, err)
		hs.Config.Handler = h
		hs.Start()
		t.Cleanup(func() { hs.Close(); h.Close() })
		f.servers = append(f.servers, hs)
	}
	return f
}

type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

func (f *fleet) post(ctx context.Context, i int, body string, hdr map[string]string) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.servers[i].URL+"/api/agent/workflow", strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := f.servers[i].Client().Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

func orderBatch(order string) string {
	return `{"version":"0.1","operations":[{"id":"o","action":"order.place","input":{"order":"` + order + `"}}]}`
}

// TestFleetRunsAKeyedBatchOnce: the same keyed batch sent to three
// instances at once runs exactly once; the others get 409 with
// Retry-After while it runs, then every instance replays the stored
// response.
func TestFleetRunsAKeyedBatchOnce(t *testing.T) {
	f := newFleet(t, startRedis(t), fleetOptions{block: true})
	key := map[string]string{"Idempotency-Key": "order-1", "X-Session": "alice"}
	replies := make(chan reply, 3)
	for i := range 3 {
		go func() { replies <- f.post(t.Context(), i, orderBatch("o1"), key) }()
	}
	<-f.placing
	for range 2 {
		var r reply
		select {
		case r = <-replies:
		case <-f.placing:
			close(f.release)
			t.Fatal("a second instance started the batch")
		}
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusConflict, r.status, r.body)
		assert.NotEmpty(t, r.header.Get("Retry-After"))
		assert.Contains(t, r.body, `"code":"idempotency_in_progress"`)
	}
	close(f.release)
	first := <-replies
	require.NoError(t, first.err)
	require.Equal(t, http.StatusOK, first.status, first.body)
	for i := range 3 {
		r := f.post(t.Context(), i, orderBatch("o1"), key)
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "instance %d", i)
		assert.Equal(t, first.body, r.body, "instance %d replays the stored response", i)
	}
	reused := f.post(t.Context(), 1, orderBatch("other"), key)
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status, "the same key with another body")
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, 1, f.orders["o1"], "placed once across the fleet")
	assert.Zero(t, f.orders["other"])
}

// TestFleetPacesASessionAcrossInstances: one session's batches spread over
// three instances at once still start Interval apart.
func TestFleetPacesASessionAcrossInstances(t *testing.T) {
	const interval = 50 * time.Millisecond
	f := newFleet(t, startRedis(t), fleetOptions{interval: interval})
	var ops []string
	for i := range 4 {
		ops = append(ops, fmt.Sprintf(`{"id":"p%d","action":"ping"}`, i))
	}
	body := `{"version":"0.1","operations":[` + strings.Join(ops, ",") + `]}`
	since := time.Now()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			r := f.post(t.Context(), i%3, body, map[string]string{"X-Session": "bob"})
			assert.NoError(t, r.err)
			assert.Equal(t, http.StatusOK, r.status, r.body)
		})
	}
	wg.Wait()
	f.mu.Lock()
	starts := slices.Clone(f.starts["bob"])
	f.mu.Unlock()
	require.Len(t, starts, 24)
	checkSpacing(t, since, starts, interval) // across the three instances
}

// TestFleetPacesEachSessionOnItsOwn: a session's next slot, an hour away,
// refuses its next operation on every instance (past MaxWait: 429), and
// holds up no other session. No clock is read: sharing one queue would
// refuse carol too, and a per-instance queue would run bob's second batch.
func TestFleetPacesEachSessionOnItsOwn(t *testing.T) {
	f := newFleet(t, startRedis(t), fleetOptions{interval: time.Hour, maxWait: time.Second})
	const ping = `{"version":"0.1","operations":[{"id":"p","action":"ping"}]}`
	bob, carol := map[string]string{"X-Session": "bob"}, map[string]string{"X-Session": "carol"}
	r := f.post(t.Context(), 0, ping, bob)
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status, r.body)
	for i := range 3 {
		r = f.post(t.Context(), i, ping, bob)
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusTooManyRequests, r.status, "instance %d: bob's next slot is an hour away: %s", i, r.body)
		assert.Contains(t, r.body, `"code":"rate_limited"`)
	}
	r = f.post(t.Context(), 1, ping, carol)
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, "carol is not in bob's queue: %s", r.body)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Len(t, f.starts["bob"], 1)
	assert.Len(t, f.starts["carol"], 1)
}

// TestFleetSurvivesRedisRestart: Redis is killed mid-run and restarted on
// the same port. Every request gets an answer (never a hang), no keyed
// batch runs twice, each outage is logged once per instance, and the
// instances recover without a restart.
func TestFleetSurvivesRedisRestart(t *testing.T) {
	srv := startRedis(t)
	var logs syncbuf.Buffer
	f := newFleet(t, srv, fleetOptions{logger: slog.New(slog.NewTextHandler(&logs, nil))})

	// Orders placed before the outage.
	for i := range 3 {
		r := f.post(t.Context(), i, orderBatch(fmt.Sprint("before-", i)), map[string]string{"Idempotency-Key": fmt.Sprint("before-", i)})
		require.Equal(t, http.StatusOK, r.status, r.body)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := range 6 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				order := fmt.Sprintf("w%d-%d", w, n)
				for attempt := range 2 { // the request, then its retry, on different instances
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
					r := f.post(ctx, (w+n+attempt)%3, orderBatch(order), map[string]string{"Idempotency-Key": order})
					cancel()
					mu.Lock()
					if r.err != nil {
						statuses[-1]++
					} else {
						statuses[r.status]++
					}
					mu.Unlock()
				}
			}
		})
	}
	// Each phase lasts until the workers have been answered in it, not a
	// fixed time (on a loaded machine, 500 ms passed without a request).
	seen := func(status, more int) {
		t.Helper()
		mu.Lock()
		from := statuses[status]
		mu.Unlock()
		deadline := time.Now().Add(healthyBudget)
		for {
			mu.Lock()
			n := statuses[status]
			mu.Unlock()
			if n >= from+more {
				return
			}
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("fewer than %d more answers %d in %v", more, status, healthyBudget)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	seen(http.StatusOK, 6)
	srv.stop()
	seen(http.StatusServiceUnavailable, 6)
	srv.start()
	seen(http.StatusOK, 6)
	close(stop)
	wg.Wait()

	mu.Lock()
	t.Logf("statuses: %v", statuses)
	assert.Zero(t, statuses[-1], "every request got an answer")
	assert.NotZero(t, statuses[http.StatusOK])
	assert.NotZero(t, statuses[http.StatusServiceUnavailable], "refused while Redis was down")
	for s := range statuses {
		assert.Contains(t, []int{http.StatusOK, http.StatusConflict, http.StatusServiceUnavailable}, s)
	}
	mu.Unlock()
	f.mu.Lock()
	for order, n := range f.orders {
		assert.LessOrEqual(t, n, 1, "order %s placed once", order)
	}
	f.mu.Unlock()

	// Recovered without restarting the instances; the records survived.
	for i := range 3 {
		r := f.post(t.Context(), i, orderBatch(fmt.Sprint("after-", i)), map[string]string{"Idempotency-Key": fmt.Sprint("after-", i)})
		assert.Equal(t, http.StatusOK, r.status, r.body)
		assert.Empty(t, r.header.Get("Idempotent-Replayed"))
		again := f.post(t.Context(), (i+1)%3, orderBatch(fmt.Sprint("before-", i)), map[string]string{"Idempotency-Key": fmt.Sprint("before-", i)})
		assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"), "a record from before the outage")
	}
	out := logs.String()
	down := strings.Count(out, "idempotency store unavailable")
	assert.GreaterOrEqual(t, down, 1)
	assert.LessOrEqual(t, down, 2*len(f.stores), "logged once per incident and instance, not per request")
	assert.Contains(t, out, "available again")
}
