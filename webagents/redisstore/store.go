package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbridge/agentbridge/webagents"
)

// Defaults of [Options] and [LimiterOptions].
const (
	DefaultPrefix        = "webagents"
	DefaultOpTimeout     = 2 * time.Second
	DefaultRetryAfter    = 2 * time.Second
	DefaultCompleteRetry = 10 * time.Second
	DefaultMaxWait       = 10 * time.Second
)

// Options configures [NewStore]. The zero value of each field is its
// documented default.
type Options struct {
	// Prefix starts every key; "" means [DefaultPrefix] ("webagents").
	Prefix string
	// OpTimeout bounds each Redis call; 0 means [DefaultOpTimeout] (2 s).
	OpTimeout time.Duration
	// RetryAfter is what a refusal sent while Redis is unreachable tells
	// the client; 0 means [DefaultRetryAfter] (2 s).
	RetryAfter time.Duration
	// CompleteRetry is how long Complete keeps trying to store a finished
	// response while Redis fails; 0 means [DefaultCompleteRetry] (10 s).
	CompleteRetry time.Duration
	// Logger receives the start and the end of each outage; nil is silent.
	Logger *slog.Logger
}

// Store is a [webagents.IdempotencyStore] in Redis. It is safe for
// concurrent use and starts no goroutines.
type Store struct {
	rdb        redis.UniversalClient
	prefix     string
	timeout    time.Duration
	retryAfter time.Duration
	retry      time.Duration
	outage     outage
}

// NewStore returns a store keeping its records in rdb; nil options mean
// the defaults.
func NewStore(rdb redis.UniversalClient, opts *Options) *Store {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	s := &Store{rdb: rdb, prefix: o.Prefix, timeout: o.OpTimeout, retryAfter: o.RetryAfter, retry: o.CompleteRetry}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.timeout <= 0 {
		s.timeout = DefaultOpTimeout
	}
	if s.retryAfter <= 0 {
		s.retryAfter = DefaultRetryAfter
	}
	if s.retry <= 0 {
		s.retry = DefaultCompleteRetry
	}
	s.outage = outage{logger: o.Logger, what: "idempotency store"}
	return s
}

// key is the record's key: the adapter's key is already an opaque hash;
// it is also the hash tag.
func (s *Store) key(k string) string { return s.prefix + ":idem:{" + k + "}" }

// reserveScript creates the record unless one exists, and returns the
// existing one's fields (fp, done, dl, st, body) or nil.
var reserveScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HMGET', KEYS[1], 'fp', 'done', 'dl', 'st', 'body')
end
redis.call('HSET', KEYS[1], 'tok', ARGV[1], 'fp', ARGV[2], 'done', '0', 'dl', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return false
`)

// completeScript stores the response if ARGV[1] still holds the running
// reservation.
var completeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'tok') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'done') ~= '0' then
  return 0
end
redis.call('HSET', KEYS[1], 'done', '1', 'st', ARGV[2], 'body', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// releaseScript drops the running reservation ARGV[1] holds.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'tok') == ARGV[1] and redis.call('HGET', KEYS[1], 'done') == '0' then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

func ttlMillis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// Reserve implements [webagents.IdempotencyStore]. While Redis fails it
// refuses with 503 idempotency_unavailable: a keyed batch never runs
// without its reservation.
func (s *Store) Reserve(ctx context.Context, r webagents.IdempotencyReservation) (*webagents.IdempotencyRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := reserveScript.Run(ctx, s.rdb, []string{s.key(r.Key)},
		r.Token, hex.EncodeToString(r.Fingerprint[:]), strconv.FormatInt(r.Deadline.UnixMilli(), 10), ttlMillis(r.TTL)).Slice()
	if errors.Is(err, redis.Nil) {
		s.outage.ok()
		return nil, nil
	}
	if err != nil {
		s.outage.fail(err)
		return nil, s.unavailable()
	}
	s.outage.ok()
	rec, err := decodeRecord(res)
	if err != nil {
		// A record this package did not write (or a concurrent Complete
		// mid-way, which scripts exclude): refuse, never run.
		return nil, s.unavailable()
	}
	return rec, nil
}

func (s *Store) unavailable() *webagents.Error {
	return &webagents.Error{Status: 503, Code: webagents.CodeIdempotencyUnavailable,
		Message: "Requests with an Idempotency-Key cannot be accepted right now; try again later.", RetryAfter: s.retryAfter}
}

func decodeRecord(fields []any) (*webagents.IdempotencyRecord, error) {
	if len(fields) != 5 {
		return nil, errors.New("redisstore: malformed record")
	}
	str := func(i int) string { v, _ := fields[i].(string); return v }
	var rec webagents.IdempotencyRecord
	fp, err := hex.DecodeString(str(0))
	if err != nil || len(fp) != len(rec.Fingerprint) {
		return nil, errors.New("redisstore: malformed record")
	}
	copy(rec.Fingerprint[:], fp)
	rec.Completed = str(1) == "1"
	if ms, err := strconv.ParseInt(str(2), 10, 64); err == nil {
		rec.Deadline = time.UnixMilli(ms)
	}
	if rec.Completed {
		if rec.Status, err = strconv.Atoi(str(3)); err != nil {
			return nil, errors.New("redisstore: malformed record")
		}
		rec.Body = []byte(str(4))
	}
	return &rec, nil
}

// Complete implements [webagents.IdempotencyStore]. It retries for up to
// Options.CompleteRetry while Redis fails; if it still cannot, the record
// stays "in progress" until its window ends (retries get 409), so the
// batch is never run twice.
func (s *Store) Complete(ctx context.Context, r webagents.IdempotencyReservation, rec webagents.IdempotencyRecord) error {
	if len(rec.Body) > webagents.TransportLimitBytes {
		return errors.New("redisstore: response larger than the transport cap")
	}
	return s.retrying(ctx, func(ctx context.Context) error {
		return completeScript.Run(ctx, s.rdb, []string{s.key(r.Key)},
			r.Token, strconv.Itoa(rec.Status), rec.Body, ttlMillis(r.TTL)).Err()
	})
}

// Release implements [webagents.IdempotencyStore].
func (s *Store) Release(ctx context.Context, r webagents.IdempotencyReservation) error {
	return s.retrying(ctx, func(ctx context.Context) error {
		return releaseScript.Run(ctx, s.rdb, []string{s.key(r.Key)}, r.Token).Err()
	})
}

func (s *Store) retrying(ctx context.Context, op func(context.Context) error) error {
	end := time.Now().Add(s.retry)
	backoff := 50 * time.Millisecond
	for {
		octx, cancel := context.WithTimeout(ctx, s.timeout)
		err := op(octx)
		cancel()
		if err == nil {
			s.outage.ok()
			return nil
		}
		s.outage.fail(err)
		if ctx.Err() != nil || time.Now().Add(backoff).After(end) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// outage logs the start and the end of a run of failures, once each.
type outage struct {
	logger  *slog.Logger
	what    string
	failing atomic.Bool
}

func (o *outage) fail(err error) {
	if o.failing.CompareAndSwap(false, true) && o.logger != nil {
		o.logger.Error("redisstore: "+o.what+" unavailable", slog.String("error", err.Error()))
	}
}

func (o *outage) ok() {
	if o.failing.Load() && o.failing.CompareAndSwap(true, false) && o.logger != nil {
		o.logger.Info("redisstore: " + o.what + " available again")
	}
}

// hashKey names a pacing scope without revealing it (scopes hold session
// keys).
func hashKey(scope string) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:16])
}
