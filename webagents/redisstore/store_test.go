package redisstore

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// A key this package did not write is refused (503), never taken for a
// reservation, and is not an outage.
func TestStoreForeignRecord(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	var logs bytes.Buffer
	s := NewStore(rdb, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := t.Context()
	for name, write := range map[string]func(key string) error{
		"garbage string": func(key string) error { return rdb.Set(ctx, key, "not a record", time.Hour).Err() },
		"short fingerprint": func(key string) error {
			return rdb.Set(ctx, key, "1|abcd|0|200|{}", time.Hour).Err()
		},
		"a hash": func(key string) error { return rdb.HSet(ctx, key, "tok", "x").Err() },
	} {
		t.Run(name, func(t *testing.T) {
			r := reservation("foreign-"+name, "t1", time.Hour)
			require.NoError(t, write(s.key(r.Key)))
			rec, err := s.Reserve(ctx, r)
			assert.Nil(t, rec)
			var werr *webagents.Error
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, webagents.CodeIdempotencyUnavailable, werr.Code)
			require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Status: 200, Body: []byte("{}")}))
			require.NoError(t, s.Release(ctx, r))
			assert.Equal(t, 1, int(rdb.Exists(ctx, s.key(r.Key)).Val()), "left as it was")
		})
	}
	assert.Empty(t, logs.String(), "not an outage")
}

func TestRecordRoundTrip(t *testing.T) {
	r := webagents.IdempotencyReservation{Key: "k", Token: "tok|with|bars", Fingerprint: [32]byte{9, 8, 7},
		Deadline: time.UnixMilli(1_700_000_000_123)}
	rec, err := decodeRecord(reservedValue(r))
	require.NoError(t, err)
	assert.Equal(t, webagents.IdempotencyRecord{Fingerprint: r.Fingerprint, Deadline: r.Deadline}, *rec)
	body := []byte(`{"a":"x|y"}` + "\x00\xff")
	rec, err = decodeRecord(string(completedValue(r, webagents.IdempotencyRecord{Status: 207, Body: body})))
	require.NoError(t, err)
	assert.Equal(t, webagents.IdempotencyRecord{Fingerprint: r.Fingerprint, Deadline: r.Deadline, Completed: true, Status: 207, Body: body}, *rec)
	for _, bad := range []string{"", "0", "2|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|t", "0|zz|1|t", "1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|x|b", "1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1"} {
		_, err := decodeRecord(bad)
		assert.Error(t, err, "%q", bad)
	}
}
