package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/agentbridge/agentbridge/webagents"
)

// deadRedis is a client of a loopback port nothing listens on.
func deadRedis(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestRedisDown: with Redis unreachable, a keyed batch is refused (never
// run without its reservation), pacing fails closed by default and open
// when chosen, nothing blocks past OpTimeout, and the outage is logged
// once however many requests fail.
func TestRedisDown(t *testing.T) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	rdb := deadRedis(t)
	store := NewStore(rdb, &Options{OpTimeout: 300 * time.Millisecond, Logger: logger})
	for range 5 {
		start := time.Now()
		rec, err := store.Reserve(t.Context(), reservation("k", "t", time.Hour))
		assert.Less(t, time.Since(start), 2*time.Second, "bounded by OpTimeout")
		assert.Nil(t, rec)
		var we *webagents.Error
		require.ErrorAs(t, err, &we)
		assert.Equal(t, webagents.CodeIdempotencyUnavailable, we.Code)
		assert.Equal(t, 503, we.HTTPStatus())
		assert.Equal(t, DefaultRetryAfter, we.RetryAfter)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "idempotency store unavailable"), "once per incident")

	closed := NewLimiter(rdb, &LimiterOptions{Interval: time.Second, OpTimeout: 300 * time.Millisecond, Logger: logger})
	err := closed.Wait(t.Context(), "session:a")
	var we *webagents.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, webagents.CodeUnavailable, we.Code)
	assert.Equal(t, 503, we.HTTPStatus())

	open := NewLimiter(rdb, &LimiterOptions{Interval: time.Second, OpTimeout: 300 * time.Millisecond, FailOpen: true})
	assert.NoError(t, open.Wait(t.Context(), "session:a"), "fail-open: the operation runs unpaced")
}

// TestRedisSlow: with Redis alive but not answering (its process stopped), every
// call gives up at OpTimeout or at the caller's earlier deadline, a keyed
// batch is refused rather than run unreserved, a reservation whose
// completion could not be stored is never handed out again, pacing fails
// closed (or open when chosen), and the store recovers when Redis answers
// again, with one log line for the start and one for the end. Both with a
// client that stops waiting when a call's context ends
// (ContextTimeoutEnabled) and with one that does not (go-redis's default).
func TestRedisSlow(t *testing.T) {
	for _, watches := range []bool{false, true} {
		t.Run(fmt.Sprint("ContextTimeoutEnabled=", watches), func(t *testing.T) {
			srv := startRedisFsync(t, "off")
			rdb := srv.clientWith(t, watches)
			require.Equal(t, watches, watchesContext(rdb))
			testRedisSlow(t, srv, rdb)
		})
	}
}

func testRedisSlow(t *testing.T, srv *redisServer, rdb *redis.Client) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	store := NewStore(rdb, &Options{OpTimeout: 200 * time.Millisecond, CompleteRetry: 500 * time.Millisecond, Logger: logger})
	ctx := t.Context()
	running := reservation("slow-running", "t1", time.Hour)
	rec, err := store.Reserve(ctx, running)
	require.NoError(t, err)
	require.Nil(t, rec)

	// Until thaw, however long the calls below take on a loaded machine.
	// A call not bounded by the store would wait for the client's read
	// timeout (healthyBudget, 30 s): returning within a third of it, not
	// within a multiple of OpTimeout that load can exceed, is what shows
	// the bound.
	srv.freeze()
	const bounded = healthyBudget / 3

	start := time.Now()
	_, err = store.Reserve(ctx, reservation("slow-new", "t2", time.Hour))
	assert.Less(t, time.Since(start), bounded, "bounded by OpTimeout (200 ms)")
	var we *webagents.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, webagents.CodeIdempotencyUnavailable, we.Code)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	start = time.Now()
	_, err = store.Reserve(short, reservation("slow-new", "t3", time.Hour))
	cancel()
	assert.Less(t, time.Since(start), bounded, "bounded by the caller's deadline")
	require.ErrorAs(t, err, &we)

	start = time.Now()
	err = store.Complete(ctx, running, webagents.IdempotencyRecord{Status: 200, Body: []byte("{}")})
	assert.Error(t, err, "the response could not be stored")
	assert.Less(t, time.Since(start), bounded, "bounded by CompleteRetry (500 ms)")

	closed := NewLimiter(rdb, &LimiterOptions{Interval: time.Second, OpTimeout: 200 * time.Millisecond})
	start = time.Now()
	require.ErrorAs(t, closed.Wait(ctx, "session:a"), &we)
	assert.Equal(t, webagents.CodeUnavailable, we.Code)
	assert.Less(t, time.Since(start), bounded, "bounded by OpTimeout (200 ms)")
	open := NewLimiter(rdb, &LimiterOptions{Interval: time.Second, OpTimeout: 200 * time.Millisecond, FailOpen: true})
	assert.NoError(t, open.Wait(ctx, "session:a"), "fail-open: the operation runs unpaced")

	srv.thaw()
	// A fresh key per try: a try the store gave up on (OpTimeout) may
	// still have reserved its key in Redis, and the next would find it.
	tries := 0
	waitFor(t, healthyBudget, "Redis answering again", func(ctx context.Context) bool {
		tries++
		rec, err = store.Reserve(ctx, reservation(fmt.Sprint("slow-after-", tries), "t4", time.Hour))
		return err == nil
	})
	assert.Nil(t, rec, "reserved: the store recovered")
	rec, err = store.Reserve(ctx, reservation("slow-running", "t5", time.Hour))
	require.NoError(t, err)
	assert.NotNil(t, rec, "the batch that ran is never reserved again, stored or not")
	assert.Equal(t, 1, strings.Count(logs.String(), "idempotency store unavailable"), "once per incident")
	assert.Equal(t, 1, strings.Count(logs.String(), "idempotency store available again"))
}
