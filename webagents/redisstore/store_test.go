package redisstore

import (
	"bytes"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
	s := NewStore(rdb, &Options{OpTimeout: healthyBudget, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
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
	for _, bad := range []string{"", "0", "2|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|t", "0|zz|1|t", "1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|x|b", "1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1",
		// statuses an HTTP response cannot carry
		"1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|0|b", "1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|-200|b",
		"1|" + string(bytes.Repeat([]byte("a"), 64)) + "|1|1000|b"} {
		_, err := decodeRecord(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// A reservation whose reply was lost and which the client resent (go-redis
// retries a command on a broken connection by default) finds its own
// record: it is still reserved by this request, not "in progress" (409).
func TestReserveResentAfterLostReply(t *testing.T) {
	srv := startRedis(t)
	proxy := newReplyDropper(t, srv.addr(), []byte("\r\nNX\r\n"))
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr, MaxRetries: 3, MinRetryBackoff: time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	s := NewStore(rdb, &Options{OpTimeout: healthyBudget})
	r := reservation("resent", "t1", time.Hour)
	rec, err := s.Reserve(t.Context(), r)
	require.NoError(t, err)
	assert.Nil(t, rec, "reserved by this request")
	assert.Equal(t, 1, int(proxy.dropped.Load()), "a reply was lost and the SET resent")
	require.NoError(t, s.Complete(t.Context(), r, webagents.IdempotencyRecord{Status: 200, Body: []byte("{}")}))
	rec, err = s.Reserve(t.Context(), reservation("resent", "t2", time.Hour))
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.True(t, rec.Completed, "completed by the reserving request")
}

// replyDropper is a TCP proxy to a Redis that, once, closes the
// connection instead of forwarding the reply to a command containing
// marker: the command ran, its reply is lost.
type replyDropper struct {
	addr    string
	dropped atomic.Int32
}

func newReplyDropper(t *testing.T, upstream string, marker []byte) *replyDropper {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &replyDropper{addr: ln.Addr().String()}
	var armed atomic.Bool
	armed.Store(true)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			var cut atomic.Bool
			wg.Go(func() { // client → Redis
				defer u.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 && bytes.Contains(buf[:n], marker) && armed.CompareAndSwap(true, false) {
						cut.Store(true)
					}
					if n > 0 {
						if _, werr := u.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
			wg.Go(func() { // Redis → client, unless cut
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := u.Read(buf)
					if n > 0 && cut.Load() {
						p.dropped.Add(1)
						u.Close()
						return
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return p
}
