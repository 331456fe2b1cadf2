package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// One behavioural suite, two implementations: the memory store and
// limiter of package webagents, and the Redis ones.

func reservation(key, token string, ttl time.Duration) webagents.IdempotencyReservation {
	return webagents.IdempotencyReservation{Key: key, Client: "c", Fingerprint: [32]byte{1, 2, 3}, TTL: ttl,
		Deadline: time.Now().Add(30 * time.Second).Truncate(time.Millisecond), Token: token}
}

func storeSuite(t *testing.T, newStore func(t *testing.T) webagents.IdempotencyStore) {
	t.Run("reserve, replay, reuse", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		r := reservation("k1", "t1", time.Hour)
		rec, err := s.Reserve(ctx, r)
		require.NoError(t, err)
		require.Nil(t, rec, "reserved")
		rec, err = s.Reserve(ctx, reservation("k1", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.False(t, rec.Completed, "in progress")
		assert.Equal(t, r.Fingerprint, rec.Fingerprint)
		assert.Equal(t, r.Deadline.UnixMilli(), rec.Deadline.UnixMilli(), "the running batch's deadline, for Retry-After")
		require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Fingerprint: r.Fingerprint, Status: 200, Body: []byte(`{"ok":true}`)}))
		rec, err = s.Reserve(ctx, reservation("k1", "t3", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.True(t, rec.Completed)
		assert.Equal(t, 200, rec.Status)
		assert.Equal(t, `{"ok":true}`, string(rec.Body))
		assert.Equal(t, r.Fingerprint, rec.Fingerprint, "the adapter compares it to refuse a reused key with 422")
	})
	t.Run("a response outlives a lost reservation", func(t *testing.T) {
		// The reservation expired while its batch ran and nobody took the
		// key: the batch ran, so its response is stored all the same.
		s, ctx := newStore(t), t.Context()
		r := reservation("lost", "t1", 50*time.Millisecond)
		rec, err := s.Reserve(ctx, r)
		require.NoError(t, err)
		require.Nil(t, rec)
		time.Sleep(100 * time.Millisecond)
		r.TTL = time.Hour
		require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Fingerprint: r.Fingerprint, Status: 200, Body: []byte(`{}`)}))
		rec, err = s.Reserve(ctx, reservation("lost", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec, "a retry replays it")
		assert.True(t, rec.Completed)
	})
	t.Run("release frees the key", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		r := reservation("k2", "t1", time.Hour)
		_, err := s.Reserve(ctx, r)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, reservation("k2", "other", time.Hour)))
		rec, err := s.Reserve(ctx, reservation("k2", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec, "another token cannot release it")
		require.NoError(t, s.Release(ctx, r))
		rec, err = s.Reserve(ctx, reservation("k2", "t2", time.Hour))
		require.NoError(t, err)
		assert.Nil(t, rec, "released")
	})
	t.Run("a completed record is never released", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		r := reservation("k3", "t1", time.Hour)
		_, err := s.Reserve(ctx, r)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Status: 201, Body: []byte("x")}))
		require.NoError(t, s.Release(ctx, r))
		rec, err := s.Reserve(ctx, reservation("k3", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, 201, rec.Status)
	})
	t.Run("expiry, and a taken-over reservation is not overwritten", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		first := reservation("k4", "first", 100*time.Millisecond)
		_, err := s.Reserve(ctx, first)
		require.NoError(t, err)
		time.Sleep(250 * time.Millisecond)
		second := reservation("k4", "second", time.Hour)
		rec, err := s.Reserve(ctx, second)
		require.NoError(t, err)
		require.Nil(t, rec, "expired: the key is new again")
		require.NoError(t, s.Complete(ctx, first, webagents.IdempotencyRecord{Status: 500, Body: []byte("stale")}))
		require.NoError(t, s.Release(ctx, first))
		rec, err = s.Reserve(ctx, reservation("k4", "third", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.False(t, rec.Completed, "the first request touched nothing")
	})
	t.Run("concurrent reservations: exactly one wins", func(t *testing.T) {
		s, ctx := newStore(t), t.Context()
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range 16 {
			wg.Go(func() {
				rec, err := s.Reserve(ctx, reservation("k5", fmt.Sprint(i), time.Hour))
				if err == nil && rec == nil {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, won)
	})
}

func limiterSuite(t *testing.T, newLimiter func(t *testing.T, interval, maxWait time.Duration) webagents.Limiter) {
	t.Run("starts of one session are spaced", func(t *testing.T) {
		const interval = 50 * time.Millisecond
		l := newLimiter(t, interval, time.Second)
		since := time.Now()
		var starts []time.Time
		for range 5 {
			require.NoError(t, l.Wait(t.Context(), "session:a"))
			starts = append(starts, time.Now())
		}
		checkSpacing(t, since, starts, interval)
	})
	t.Run("sessions are independent", func(t *testing.T) {
		// a's next slot is an hour away, past MaxWait: in a's queue, b
		// would be refused.
		l := newLimiter(t, time.Hour, time.Second)
		require.NoError(t, l.Wait(t.Context(), "session:a"))
		require.NoError(t, l.Wait(t.Context(), "session:b"))
		var we *webagents.Error
		require.ErrorAs(t, l.Wait(t.Context(), "session:a"), &we)
		assert.Equal(t, webagents.CodeRateLimited, we.Code)
	})
	t.Run("past MaxWait: 429", func(t *testing.T) {
		l := newLimiter(t, time.Hour, time.Second)
		require.NoError(t, l.Wait(t.Context(), "session:c"))
		err := l.Wait(t.Context(), "session:c")
		var we *webagents.Error
		require.ErrorAs(t, err, &we)
		assert.Equal(t, webagents.CodeRateLimited, we.Code)
	})
	t.Run("the context ends the wait", func(t *testing.T) {
		l := newLimiter(t, 5*time.Second, 10*time.Second)
		require.NoError(t, l.Wait(t.Context(), "session:d"))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err := l.Wait(ctx, "session:d")
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	})
}

func TestMemorySuite(t *testing.T) {
	t.Run("store", func(t *testing.T) {
		storeSuite(t, func(*testing.T) webagents.IdempotencyStore { return webagents.NewMemoryIdempotencyStore(nil) })
	})
	t.Run("limiter", func(t *testing.T) {
		limiterSuite(t, func(_ *testing.T, interval, maxWait time.Duration) webagents.Limiter {
			return &webagents.SessionLimiter{Interval: interval, MaxWait: maxWait}
		})
	})
}

func TestRedisSuite(t *testing.T) {
	srv := startRedis(t)
	n := 0
	t.Run("store", func(t *testing.T) {
		storeSuite(t, func(t *testing.T) webagents.IdempotencyStore {
			n++
			return NewStore(srv.client(t), &Options{Prefix: fmt.Sprintf("suite%d", n), OpTimeout: healthyBudget})
		})
	})
	t.Run("limiter", func(t *testing.T) {
		limiterSuite(t, func(t *testing.T, interval, maxWait time.Duration) webagents.Limiter {
			n++
			return NewLimiter(srv.client(t), &LimiterOptions{Interval: interval, MaxWait: maxWait, Prefix: fmt.Sprintf("suite%d", n), OpTimeout: healthyBudget})
		})
	})
}

// clockSlack is what checkSpacing allows for the Redis limiter's clock:
// its slots are on Redis's wall clock (TIME), the starts on Go's monotonic
// one, and the two may drift apart by the wall clock's slew (at most
// 500 ppm, 0.6 ms over the fleet test's 1.2 s).
const clockSlack = time.Millisecond

// checkSpacing checks that the starts of operations paced by interval,
// whose first Wait was called after since, are no earlier than the
// slots pacing gives them: the k-th start (sorted) at least k intervals
// after since. Each Wait returns at or after its slot and the slots are
// interval apart from the first, which is at or after since, so the k-th
// start is at or after since plus k intervals. A loaded machine only makes
// starts later, never earlier: this fails only when starts come closer
// than pacing allows (without pacing, they all come at once). The gap
// between two starts is not checked: after a late start, the next one on
// time comes sooner than interval.
func checkSpacing(t *testing.T, since time.Time, starts []time.Time, interval time.Duration) {
	t.Helper()
	starts = slices.Clone(starts)
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for k, s := range starts {
		if early := since.Add(time.Duration(k)*interval - clockSlack).Sub(s); early > 0 {
			t.Errorf("start %d of %d came %v after the first Wait was called, %v before its slot (slots %v apart)", k, len(starts), s.Sub(since), early, interval)
			return
		}
	}
	t.Logf("%d starts over %v (slots %v apart)", len(starts), starts[len(starts)-1].Sub(since), interval)
}
