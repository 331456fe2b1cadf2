package redisstore

import (
	"log/slog"
	"net"
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
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
