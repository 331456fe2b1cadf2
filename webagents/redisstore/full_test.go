package redisstore

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/syncbuf"
)

// largeBatch is one operation whose result is n bytes of "x".
func largeBatch(n int) string {
	return `{"version":"0.1","operations":[{"id":"l","action":"large","input":{"bytes":` + strconv.Itoa(n) + `}}]}`
}

// pingBatch is n paced operations.
func pingBatch(n int) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"id":"p%d","action":"ping"}`, i)
	}
	return `{"version":"0.1","operations":[` + strings.Join(ops, ",") + `]}`
}

// redisMemory returns Redis's used_memory and maxmemory.
func redisMemory(t *testing.T, rdb *redis.Client) (used, limit int64) {
	t.Helper()
	info, err := rdb.Info(t.Context(), "memory").Result()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "used_memory":
			used, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			limit, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return used, limit
}

// TestOneClientCannotFillRedis: one client storing large responses under
// fresh keys is refused once its records hold its byte share (the
// default, 64 MiB), long before a Redis of 96 MiB (maxmemory, noeviction)
// is full; another client's keyed batch, the first client's replays,
// unkeyed batches and pacing go on working.
func TestOneClientCannotFillRedis(t *testing.T) {
	srv := newRedisServer(t, "off", freePort(t), "--maxmemory", "96mb", "--maxmemory-policy", "noeviction")
	rdb := srv.client(t)
	f := newFleet(t, srv, fleetOptions{interval: time.Millisecond, store: &Options{}})
	const size = 900_000
	stored := 0
	for i := 0; ; i++ {
		require.Less(t, i, 150, "client a is never refused")
		r := f.post(t.Context(), i%3, largeBatch(size), map[string]string{"X-Session": "a", "Idempotency-Key": fmt.Sprint("a-", i)})
		require.NoError(t, r.err)
		if r.status != http.StatusOK {
			assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
			assert.Contains(t, r.body, `"code":"idempotency_unavailable"`)
			assert.NotEmpty(t, r.header.Get("Retry-After"))
			break
		}
		stored++
	}
	used, limit := redisMemory(t, rdb)
	t.Logf("client a stored %d responses of %d bytes (%.1f MiB), then was refused; Redis used %.1f MiB of %.0f MiB",
		stored, size, float64(stored*size)/(1<<20), float64(used)/(1<<20), float64(limit)/(1<<20))
	assert.Less(t, used, limit-16<<20, "one client's share leaves room for the others")
	assert.GreaterOrEqual(t, stored*size, DefaultMaxClientBytes-2*size, "a's share was used, not refused early")

	r := f.post(t.Context(), 1, largeBatch(size), map[string]string{"X-Session": "b", "Idempotency-Key": "b-0"})
	assert.Equal(t, http.StatusOK, r.status, "another client's keyed batch runs: %s", r.body)
	r = f.post(t.Context(), 2, largeBatch(size), map[string]string{"X-Session": "a", "Idempotency-Key": "a-0"})
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "a's stored responses are still replayed")
	r = f.post(t.Context(), 0, pingBatch(4), map[string]string{"X-Session": "a"})
	assert.Equal(t, http.StatusOK, r.status, "a's unkeyed batch runs, paced: %s", r.body)
	r = f.post(t.Context(), 0, pingBatch(4), map[string]string{"X-Session": "c"})
	assert.Equal(t, http.StatusOK, r.status, "another client's unkeyed batch runs, paced: %s", r.body)
}

// TestRedisFull: when Redis is full (maxmemory, noeviction: it refuses
// writes), a new keyed batch is refused with 503 idempotency_unavailable
// and nothing runs, but stored responses are still replayed, a batch that
// was running stores its response (so a retry replays it rather than
// getting 409 for the window), pacing and unkeyed batches go on working,
// and the condition is logged once, not as Redis being unreachable.
func TestRedisFull(t *testing.T) {
	srv := newRedisServer(t, "off", freePort(t), "--maxmemory", "16mb", "--maxmemory-policy", "noeviction")
	rdb := srv.client(t)
	var logs syncbuf.Buffer
	f := newFleet(t, srv, fleetOptions{interval: time.Millisecond, block: true, store: &Options{},
		logger: slog.New(slog.NewTextHandler(&logs, nil))})
	key := func(k string) map[string]string { return map[string]string{"X-Session": "a", "Idempotency-Key": k} }

	done := f.post(t.Context(), 0, largeBatch(1000), key("done"))
	require.Equal(t, http.StatusOK, done.status, done.body)
	running := make(chan reply, 1)
	go func() { running <- f.post(t.Context(), 1, orderBatch("o1"), key("running")) }()
	<-f.placing

	// Fill Redis until it refuses writes.
	filler := strings.Repeat("f", 256<<10)
	for i := 0; ; i++ {
		require.Less(t, i, 200, "Redis never filled")
		err := rdb.Set(t.Context(), fmt.Sprint("filler:", i), filler, 0).Err()
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "OOM "), "%v", err)
			break
		}
	}
	// Redis refuses a write while its memory is over maxmemory; what is
	// left under it after the last refusal would still take a small one.
	// Lower the limit below what is used, so that Redis stays full.
	used, limit := redisMemory(t, rdb)
	t.Logf("Redis full: used %.1f MiB of %.0f MiB", float64(used)/(1<<20), float64(limit)/(1<<20))
	require.NoError(t, rdb.ConfigSet(t.Context(), "maxmemory", strconv.FormatInt(used-1<<20, 10)).Err())

	for i := range 3 {
		r := f.post(t.Context(), i, largeBatch(10), key(fmt.Sprint("new-", i)))
		assert.Equal(t, http.StatusServiceUnavailable, r.status, r.body)
		assert.Contains(t, r.body, `"code":"idempotency_unavailable"`)
		assert.NotEmpty(t, r.header.Get("Retry-After"))
		r = f.post(t.Context(), i, largeBatch(1000), key("done"))
		assert.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "a stored response is replayed")
		assert.Equal(t, done.body, r.body)
		r = f.post(t.Context(), i, pingBatch(3), map[string]string{"X-Session": "a"})
		assert.Equal(t, http.StatusOK, r.status, "an unkeyed batch runs, paced: %s", r.body)
		r = f.post(t.Context(), i, pingBatch(3), nil)
		assert.Equal(t, http.StatusOK, r.status, "an unkeyed batch without a session runs, paced: %s", r.body)
	}
	f.mu.Lock()
	assert.Len(t, f.starts["a"], 9, "paced operations ran")
	f.mu.Unlock()

	close(f.release)
	first := <-running
	require.Equal(t, http.StatusOK, first.status, first.body)
	again := f.post(t.Context(), 2, orderBatch("o1"), key("running"))
	assert.Equal(t, http.StatusOK, again.status, "the running batch's response was stored: %s", again.body)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	f.mu.Lock()
	assert.Equal(t, 1, f.orders["o1"])
	f.mu.Unlock()

	out := logs.String()
	assert.NotContains(t, out, "idempotency store unavailable", "a full Redis is not an outage")
	assert.NotContains(t, out, "limiter unavailable")
	full := strings.Count(out, "idempotency store full")
	assert.GreaterOrEqual(t, full, 1, out)
	assert.LessOrEqual(t, full, len(f.stores), "logged once per instance: %s", out)

	// Room again: keyed batches are accepted, and the end is logged.
	require.NoError(t, rdb.FlushDB(t.Context()).Err())
	require.NoError(t, rdb.ConfigSet(t.Context(), "maxmemory", strconv.FormatInt(limit, 10)).Err())
	for i := range 3 {
		r := f.post(t.Context(), i, largeBatch(10), key(fmt.Sprint("after-", i)))
		assert.Equal(t, http.StatusOK, r.status, r.body)
	}
	assert.Equal(t, full, strings.Count(logs.String(), "no longer full"), "the end logged by each instance that logged the start")
}
