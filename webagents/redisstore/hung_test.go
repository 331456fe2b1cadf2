package redisstore

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// blackHole listens on loopback, accepts connections and reads them, and
// never answers: a Redis that hangs.
func blackHole(t *testing.T) (string, *atomic.Int32) {
	var accepted atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	return ln.Addr().String(), &accepted
}

// TestHungRedisGoroutinesBounded: on a client that does not watch the
// context (go-redis's default) and never times out a read, each call the
// store abandons at OpTimeout leaves a goroutine behind. Those are bounded
// by the client's connections (PoolSize, and PipelinePoolSize for the
// reservation's pipeline) whatever the request rate: calls beyond them wait
// for a connection in the pool, which does honour the context.
func TestHungRedisGoroutinesBounded(t *testing.T) {
	for _, waves := range []int{5, 40} {
		t.Run(fmt.Sprint(waves), func(t *testing.T) { testHung(t, waves) })
	}
}

func testHung(t *testing.T, waves int) {
	const poolSize = 4
	addr, accepted := blackHole(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: -1, WriteTimeout: -1,
		PoolSize: poolSize, PipelinePoolSize: poolSize})
	defer rdb.Close() // ends the calls left reading
	s := NewStore(rdb, &Options{OpTimeout: 20 * time.Millisecond})
	base := runtime.NumGoroutine()
	var peak int
	const wave = 20
	for n := range waves {
		var wg sync.WaitGroup
		for i := range wave {
			wg.Go(func() {
				_, err := s.Reserve(context.Background(), webagents.IdempotencyReservation{Key: fmt.Sprint("h", n, "-", i),
					Client: "c", TTL: time.Minute, Deadline: time.Now().Add(time.Second), Token: "t"})
				var we *webagents.Error
				assert.ErrorAs(t, err, &we, "refused, never run without a reservation")
			})
		}
		wg.Wait()
		// Less the black hole's own goroutine per connection.
		peak = max(peak, runtime.NumGoroutine()-base-int(accepted.Load()))
	}
	t.Logf("goroutines left behind after %d abandoned calls: %d, on %d connections (PoolSize and PipelinePoolSize %d)", wave*waves, peak, accepted.Load(), poolSize)
	// One per connection of the two pools (each stuck reading), and the
	// last wave's still unwinding: not one per call.
	assert.LessOrEqual(t, peak, 2*poolSize+wave, "bounded by the pools, not by the number of calls")
}

// countHook counts the scripts a client runs.
type countHook struct{ n atomic.Int32 }

func (*countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (*countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLimiterOutageFailsFast: while Redis hangs, the limiter tries it once
// per RetryAfter, not once per operation: the others fail open (or closed)
// at once instead of each waiting OpTimeout, so a fail-open batch of many
// operations still runs within its deadline. It tries Redis again after
// RetryAfter and recovers.
func TestLimiterOutageFailsFast(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprint("FailOpen=", open), func(t *testing.T) {
			addr, _ := blackHole(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: time.Minute})
			defer rdb.Close()
			hook := &countHook{}
			rdb.AddHook(hook)
			l := NewLimiter(rdb, &LimiterOptions{Interval: time.Millisecond, OpTimeout: 20 * time.Millisecond,
				RetryAfter: time.Hour, FailOpen: open})
			for range 8 {
				err := l.Wait(t.Context(), "session:s")
				if open {
					assert.NoError(t, err)
				} else {
					var we *webagents.Error
					require.ErrorAs(t, err, &we)
					assert.Equal(t, webagents.CodeUnavailable, we.Code)
				}
			}
			assert.Equal(t, int32(1), hook.n.Load(), "one call tried the hung Redis")
		})
	}
	t.Run("recovers", func(t *testing.T) {
		const retryAfter = 500 * time.Millisecond
		srv := startRedis(t)
		rdb := srv.client(t)
		hook := &countHook{}
		rdb.AddHook(hook)
		// Redis is up, or refuses at once while it is stopped.
		l := NewLimiter(rdb, &LimiterOptions{Interval: time.Millisecond, OpTimeout: healthyBudget,
			RetryAfter: retryAfter})
		// The limiter's clock for RetryAfter, moved by hand: how long the
		// test takes between two calls does not matter.
		var clock atomic.Int64
		clock.Store(time.Now().UnixNano())
		l.now = func() time.Time { return time.Unix(0, clock.Load()) }
		require.NoError(t, l.Wait(t.Context(), "session:r"))
		srv.stop()
		require.Error(t, l.Wait(t.Context(), "session:r"))
		tried := hook.n.Load()
		clock.Add(int64(retryAfter - time.Nanosecond))
		require.Error(t, l.Wait(t.Context(), "session:r"))
		assert.Equal(t, tried, hook.n.Load(), "within RetryAfter: Redis not tried")
		srv.start()
		clock.Add(int64(time.Nanosecond))
		assert.NoError(t, l.Wait(t.Context(), "session:r"), "tried again after RetryAfter")
		assert.Greater(t, hook.n.Load(), tried)
	})
}
