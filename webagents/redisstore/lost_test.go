package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// TestCompleteAfterRedisLostReservation: Redis forgot a running batch's
// reservation (a failover to a replica that had not received it, a
// restart without persistence, an eviction). The batch ran: its response
// must still be stored, or every later retry runs the batch again.
func TestCompleteAfterRedisLostReservation(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	s := NewStore(rdb, nil)
	ctx := t.Context()
	r := reservation("lost", "t1", time.Hour)
	rec, err := s.Reserve(ctx, r)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, rdb.Del(ctx, s.key(r.Key)).Err(), "Redis loses the reservation")
	require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Status: 200, Body: []byte(`{"ok":true}`)}))
	rec, err = s.Reserve(ctx, reservation("lost", "t2", time.Hour))
	require.NoError(t, err)
	require.NotNil(t, rec, "the retry finds the stored response, not a free key")
	assert.True(t, rec.Completed)
	assert.Equal(t, `{"ok":true}`, string(rec.Body))
	ttl := rdb.PTTL(ctx, s.key(r.Key)).Val()
	assert.Greater(t, ttl, 59*time.Minute, "kept for the window")

	// A reservation taken over by another request is still left alone.
	other := reservation("taken", "t1", time.Hour)
	_, err = s.Reserve(ctx, other)
	require.NoError(t, err)
	require.NoError(t, rdb.Del(ctx, s.key(other.Key)).Err())
	newer := reservation("taken", "t2", time.Hour)
	_, err = s.Reserve(ctx, newer)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, other, webagents.IdempotencyRecord{Status: 500, Body: []byte("stale")}))
	rec, err = s.Reserve(ctx, reservation("taken", "t3", time.Hour))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.False(t, rec.Completed, "the newer reservation stands")
}

// TestStoreBoundsOneClient: one client (a session, or an address) cannot
// fill Redis with records by sending fresh Idempotency-Keys: past its
// share its reservations are refused (503, Retry-After) and undone, while
// other clients and the client's stored responses are unaffected.
func TestStoreBoundsOneClient(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	s := NewStore(rdb, &Options{MaxClientReservations: 4})
	ctx := t.Context()
	first := reservation("q0", "t", time.Hour)
	for i := range 3 {
		r := reservation(fmt.Sprint("q", i), "t", time.Hour)
		rec, err := s.Reserve(ctx, r)
		require.NoError(t, err, "within the share")
		require.Nil(t, rec)
	}
	require.NoError(t, s.Complete(ctx, first, webagents.IdempotencyRecord{Status: 200, Body: []byte("{}")}))
	for range 10 { // polling a running key and replaying a stored one take no room
		rec, err := s.Reserve(ctx, reservation("q1", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
		rec, err = s.Reserve(ctx, reservation("q0", "t2", time.Hour))
		require.NoError(t, err)
		require.NotNil(t, rec)
	}
	rec, err := s.Reserve(ctx, reservation("q3", "t", time.Hour))
	require.NoError(t, err, "the fourth reservation is within the share")
	require.Nil(t, rec)
	over := reservation("q4", "t", time.Hour)
	rec, err = s.Reserve(ctx, over)
	assert.Nil(t, rec)
	var we *webagents.Error
	require.ErrorAs(t, err, &we, "past the share")
	assert.Equal(t, webagents.CodeIdempotencyUnavailable, we.Code)
	assert.Equal(t, 503, we.HTTPStatus())
	assert.Greater(t, we.RetryAfter, 59*time.Minute, "until the client's count restarts")
	assert.Zero(t, rdb.Exists(ctx, s.key(over.Key)).Val(), "the refused reservation is undone")

	rec, err = s.Reserve(ctx, reservation("q0", "t9", time.Hour))
	require.NoError(t, err)
	require.NotNil(t, rec, "a stored response is still replayed")
	assert.True(t, rec.Completed)

	other := reservation("q4", "t", time.Hour)
	other.Client = "another client"
	rec, err = s.Reserve(ctx, other)
	require.NoError(t, err, "another client has its own share")
	assert.Nil(t, rec)

	unbounded := NewStore(rdb, &Options{Prefix: "unbounded", MaxClientReservations: -1})
	for i := range 10 {
		_, err := unbounded.Reserve(ctx, reservation(fmt.Sprint("u", i), "t", time.Hour))
		require.NoError(t, err, "a negative bound is no bound")
	}
}

// TestLimiterRefusalSaysWhen: a 429 past MaxWait tells the client when the
// session's queue will be short enough again.
func TestLimiterRefusalSaysWhen(t *testing.T) {
	srv := startRedis(t)
	l := NewLimiter(srv.client(t), &LimiterOptions{Interval: time.Hour, MaxWait: time.Minute})
	require.NoError(t, l.Wait(t.Context(), "session:x"))
	err := l.Wait(t.Context(), "session:x")
	var we *webagents.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, webagents.CodeRateLimited, we.Code)
	assert.Greater(t, we.RetryAfter, 58*time.Minute, "the next slot, less MaxWait")
	assert.LessOrEqual(t, we.RetryAfter, 59*time.Minute)
}
