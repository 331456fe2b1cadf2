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
	s := NewStore(rdb, &Options{OpTimeout: healthyBudget})
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
	s := NewStore(rdb, &Options{MaxClientReservations: 4, OpTimeout: healthyBudget})
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
	assert.Greater(t, we.RetryAfter, 59*time.Minute, "until its oldest record expires")
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

	unbounded := NewStore(rdb, &Options{Prefix: "unbounded", MaxClientReservations: -1, OpTimeout: healthyBudget})
	for i := range 10 {
		_, err := unbounded.Reserve(ctx, reservation(fmt.Sprint("u", i), "t", time.Hour))
		require.NoError(t, err, "a negative bound is no bound")
	}
}

// TestLimiterRefusalSaysWhen: a 429 past MaxWait tells the client when the
// session's queue will be short enough again.
func TestLimiterRefusalSaysWhen(t *testing.T) {
	srv := startRedis(t)
	l := NewLimiter(srv.client(t), &LimiterOptions{Interval: time.Hour, MaxWait: time.Minute, OpTimeout: healthyBudget})
	require.NoError(t, l.Wait(t.Context(), "session:x"))
	err := l.Wait(t.Context(), "session:x")
	var we *webagents.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, webagents.CodeRateLimited, we.Code)
	assert.Greater(t, we.RetryAfter, 58*time.Minute, "the next slot, less MaxWait")
	assert.LessOrEqual(t, we.RetryAfter, 59*time.Minute)
}

// TestStoreBoundsClientBytes: a client's records hold at most
// MaxClientBytes: a running batch counts as the largest response until it
// stores its own, so a client cannot pass the bound by running many
// batches at once; a released reservation and a replay take no room; and
// the refusal's Retry-After is a batch deadline while running batches hold
// the room, and when the oldest record expires once stored ones do.
func TestStoreBoundsClientBytes(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	const mib = 1 << 20
	s := NewStore(rdb, &Options{MaxClientBytes: 3*mib + 10, OpTimeout: healthyBudget})
	ctx := t.Context()
	refused := func(r webagents.IdempotencyReservation) *webagents.Error {
		t.Helper()
		rec, err := s.Reserve(ctx, r)
		assert.Nil(t, rec)
		var we *webagents.Error
		require.ErrorAs(t, err, &we)
		assert.Equal(t, webagents.CodeIdempotencyUnavailable, we.Code)
		assert.Zero(t, rdb.Exists(ctx, s.key(r.Key)).Val(), "the refused reservation is undone")
		return we
	}
	var running []webagents.IdempotencyReservation
	for i := range 3 {
		r := reservation(fmt.Sprint("b", i), "t", time.Hour)
		rec, err := s.Reserve(ctx, r)
		require.NoError(t, err, "running batch %d is within the share", i)
		require.Nil(t, rec)
		running = append(running, r)
	}
	we := refused(reservation("b3", "t", time.Hour))
	assert.LessOrEqual(t, we.RetryAfter, 30*time.Second, "running batches hold the room: a batch deadline")

	rec, err := s.Reserve(ctx, reservation("b0", "t2", time.Hour))
	require.NoError(t, err, "polling a running key takes no room")
	require.NotNil(t, rec)

	require.NoError(t, s.Release(ctx, running[2]))
	require.NoError(t, s.Complete(ctx, running[1], webagents.IdempotencyRecord{Status: 200, Body: make([]byte, mib-100)}))
	b3 := reservation("b3", "t", time.Hour)
	rec, err = s.Reserve(ctx, b3)
	require.NoError(t, err, "released and stored records gave room back")
	require.Nil(t, rec)
	// b0 and b3 running (1 MiB+1 each), b1 stored (1 MiB-100): full.
	refused(reservation("b4", "t", time.Hour))
	require.NoError(t, s.Complete(ctx, running[0], webagents.IdempotencyRecord{Status: 200, Body: []byte("{}")}))
	require.NoError(t, s.Complete(ctx, b3, webagents.IdempotencyRecord{Status: 200, Body: make([]byte, mib-100)}))
	b4 := reservation("b4", "t", time.Hour)
	rec, err = s.Reserve(ctx, b4)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, s.Complete(ctx, b4, webagents.IdempotencyRecord{Status: 200, Body: make([]byte, mib-100)}))
	we = refused(reservation("b5", "t", time.Hour))
	assert.Greater(t, we.RetryAfter, 59*time.Minute, "stored records hold the room: until the oldest expires")
	for range 5 {
		rec, err := s.Reserve(ctx, reservation("b1", "t9", time.Hour))
		require.NoError(t, err, "a stored response is still replayed")
		require.NotNil(t, rec)
		assert.True(t, rec.Completed)
	}
	other := reservation("b5", "t", time.Hour)
	other.Client = "another client"
	rec, err = s.Reserve(ctx, other)
	require.NoError(t, err, "another client has its own share")
	assert.Nil(t, rec)

	total, err := rdb.HGet(ctx, s.clientKeys("c")[1], "total").Int()
	require.NoError(t, err)
	assert.Equal(t, 3*(mib-100)+2, total, "the share holds the stored responses' bytes")
	assert.LessOrEqual(t, rdb.PTTL(ctx, s.clientKeys("c")[0]).Val(), time.Hour+2*time.Second, "the share expires with its records")
}
