package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
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
	// DefaultMaxClientReservations is how many new reservations one client
	// may make per window (the memory store's per-client default share).
	DefaultMaxClientReservations = 1000
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
	// MaxClientReservations bounds the keyed requests one client (the
	// reservation's Client: its session, or its address) brings to the
	// store per window, counted from its first one; past it, Reserve
	// refuses with 503 idempotency_unavailable and a Retry-After of when
	// the count restarts, so that one client cannot fill Redis with
	// records. 0 means [DefaultMaxClientReservations] (1,000); a negative
	// value means no bound. Replays, 409s and 422s do not count.
	MaxClientReservations int
	// Logger receives the start and the end of each outage; nil is silent.
	Logger *slog.Logger
}

// Store is a [webagents.IdempotencyStore] in Redis. It is safe for
// concurrent use and starts no goroutines.
type Store struct {
	rdb        redis.UniversalClient
	watches    bool // rdb stops waiting for Redis when a call's context ends
	prefix     string
	timeout    time.Duration
	retryAfter time.Duration
	retry      time.Duration
	maxClient  int // 0: unbounded
	outage     outage
}

// NewStore returns a store keeping its records in rdb; nil options mean
// the defaults.
func NewStore(rdb redis.UniversalClient, opts *Options) *Store {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	s := &Store{rdb: rdb, watches: watchesContext(rdb), prefix: o.Prefix, timeout: o.OpTimeout, retryAfter: o.RetryAfter, retry: o.CompleteRetry}
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
	switch {
	case o.MaxClientReservations == 0:
		s.maxClient = DefaultMaxClientReservations
	case o.MaxClientReservations > 0:
		s.maxClient = o.MaxClientReservations
	}
	s.outage = outage{logger: o.Logger, what: "idempotency store"}
	return s
}

// key is the record's key: the adapter's key is already an opaque hash;
// it is also the hash tag. The "idem2" namespace holds string records
// (see [reservedValue]); "idem" held the hashes of earlier versions.
func (s *Store) key(k string) string { return s.prefix + ":idem2:{" + k + "}" }

// A record is one string, so that a reservation is one plain command
// (SET NX GET, no script) and a completion or release one short script:
//
//	reserved:  "0|" fingerprint (hex) "|" deadline (Unix ms) "|" token
//	completed: "1|" fingerprint (hex) "|" deadline (Unix ms) "|" status "|" body
//
// Complete and Release act only when the key still holds exactly the
// reservation they were given, which carries its unique token.
func reservedValue(r webagents.IdempotencyReservation) string {
	return "0|" + hex.EncodeToString(r.Fingerprint[:]) + "|" + strconv.FormatInt(r.Deadline.UnixMilli(), 10) + "|" + r.Token
}

func completedValue(r webagents.IdempotencyReservation, rec webagents.IdempotencyRecord) []byte {
	v := make([]byte, 0, 2+64+1+20+1+3+1+len(rec.Body))
	v = append(v, "1|"...)
	v = hex.AppendEncode(v, r.Fingerprint[:])
	v = append(v, '|')
	v = strconv.AppendInt(v, r.Deadline.UnixMilli(), 10)
	v = append(v, '|')
	v = strconv.AppendInt(v, int64(rec.Status), 10)
	v = append(v, '|')
	return append(v, rec.Body...)
}

// completeScript stores the response ARGV[2] if the key still holds the
// reservation ARGV[1], or holds nothing: Redis lost the reservation (a
// failover, a restart without persistence) while the batch ran, and no
// other request has reserved the key since, so storing the response is
// what keeps a retry from running the batch again. pcall: a key of another
// type is not ours, not an error to retry.
var completeScript = redis.NewScript(`
local v = redis.pcall('GET', KEYS[1])
if v ~= false and v ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// releaseScript drops the reservation ARGV[1] if the key still holds it.
var releaseScript = redis.NewScript(`
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// unquotaScript gives back a count Reserve's INCR took, unless the window
// ended meanwhile (a DECR would make a key without expiry).
var unquotaScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECR', KEYS[1])
end
return 0
`)

func (s *Store) quotaKey(client string) string { return s.prefix + ":quota:{" + client + "}" }

func ttlMillis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// Reserve implements [webagents.IdempotencyStore] with one SET NX GET
// (Redis 7.0 or later). While Redis fails it refuses with 503
// idempotency_unavailable: a keyed batch never runs without its
// reservation.
func (s *Store) Reserve(ctx context.Context, r webagents.IdempotencyReservation) (*webagents.IdempotencyRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	mine := reservedValue(r)
	set := func(ctx context.Context, c redis.Cmdable) *redis.StatusCmd {
		return c.SetArgs(ctx, s.key(r.Key), mine, redis.SetArgs{Mode: "NX", Get: true, TTL: max(r.TTL, time.Millisecond)})
	}
	var count int64 = -1
	old, err := bounded(ctx, s.watches, func(ctx context.Context) (string, error) {
		if s.maxClient == 0 {
			return set(ctx, s.rdb).Result()
		}
		// One round trip of plain commands (a script costs Redis several
		// times as much): count the client's request, start its window if
		// the count has none (NX: also repairs a count left without one),
		// and reserve.
		qk := s.quotaKey(r.Client)
		pipe := s.rdb.Pipeline()
		incr := pipe.Incr(ctx, qk)
		pipe.Do(ctx, "pexpire", qk, ttlMillis(r.TTL), "NX")
		cmd := set(ctx, pipe)
		_, _ = pipe.Exec(ctx)
		if n, err := incr.Result(); err == nil {
			count = n
		}
		return cmd.Result()
	})
	if errors.Is(err, redis.Nil) || (err == nil && old == mine) {
		// Absent, so now ours; or ours already: the client resent the SET
		// after losing its reply (go-redis retries by default), and the
		// token in the value is this request's alone.
		s.outage.ok()
		if count > int64(s.maxClient) {
			// Over its share: undo the reservation (best effort, within
			// this call's time: if it fails, the key answers 409 until it
			// expires) and refuse.
			_ = boundedErr(ctx, s.watches, func(ctx context.Context) error {
				return releaseScript.Run(ctx, s.rdb, []string{s.key(r.Key)}, mine).Err()
			})
			e := s.unavailable()
			e.Message = "Too many requests with an Idempotency-Key from this client; try again later."
			left, _ := bounded(ctx, s.watches, func(ctx context.Context) (time.Duration, error) {
				return s.rdb.PTTL(ctx, s.quotaKey(r.Client)).Result()
			})
			e.RetryAfter = max(left, time.Second)
			return nil, e
		}
		return nil, nil
	}
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		// A key of another type this package did not write: Redis works.
		s.outage.ok()
		return nil, s.unavailable()
	}
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The request went away: not an outage.
		return nil, s.unavailable()
	}
	if err != nil {
		if strings.Contains(err.Error(), "syntax error") {
			err = fmt.Errorf("%w (the store needs Redis 7.0 or later, for SET NX GET)", err)
		}
		s.outage.fail(err)
		return nil, s.unavailable()
	}
	s.outage.ok()
	if count >= 0 {
		// Only new reservations take room: a replay, a 409 or a 422 gives
		// its count back, so that a client polling a key stuck in progress
		// does not use up its share. Best effort, within this call's time.
		_ = boundedErr(ctx, s.watches, func(ctx context.Context) error {
			return unquotaScript.Run(ctx, s.rdb, []string{s.quotaKey(r.Client)}).Err()
		})
	}
	rec, err := decodeRecord(old)
	if err != nil {
		// A record this package did not write: refuse, never run.
		return nil, s.unavailable()
	}
	return rec, nil
}

func (s *Store) unavailable() *webagents.Error {
	return &webagents.Error{Status: 503, Code: webagents.CodeIdempotencyUnavailable,
		Message: "Requests with an Idempotency-Key cannot be accepted right now; try again later.", RetryAfter: s.retryAfter}
}

var errMalformed = errors.New("redisstore: malformed record")

func decodeRecord(v string) (*webagents.IdempotencyRecord, error) {
	var rec webagents.IdempotencyRecord
	state, v, ok1 := strings.Cut(v, "|")
	fp, v, ok2 := strings.Cut(v, "|")
	dl, v, ok3 := strings.Cut(v, "|")
	if !ok1 || !ok2 || !ok3 || (state != "0" && state != "1") || hex.DecodedLen(len(fp)) != len(rec.Fingerprint) {
		return nil, errMalformed
	}
	if _, err := hex.Decode(rec.Fingerprint[:], []byte(fp)); err != nil {
		return nil, errMalformed
	}
	ms, err := strconv.ParseInt(dl, 10, 64)
	if err != nil {
		return nil, errMalformed
	}
	rec.Deadline = time.UnixMilli(ms)
	if state == "1" {
		st, body, ok := strings.Cut(v, "|")
		if !ok {
			return nil, errMalformed
		}
		if rec.Status, err = strconv.Atoi(st); err != nil || rec.Status < 100 || rec.Status > 599 {
			return nil, errMalformed
		}
		rec.Completed, rec.Body = true, []byte(body)
	}
	return &rec, nil
}

// Complete implements [webagents.IdempotencyStore]. When the key holds
// nothing (Redis lost the reservation while the batch ran) it stores the
// response all the same; it leaves a key another request reserved since
// alone. It retries for up to
// Options.CompleteRetry while Redis fails; if it still cannot, the record
// stays "in progress" until its window ends (retries get 409), so the
// batch is never run twice.
func (s *Store) Complete(ctx context.Context, r webagents.IdempotencyReservation, rec webagents.IdempotencyRecord) error {
	if len(rec.Body) > webagents.TransportLimitBytes {
		return errors.New("redisstore: response larger than the transport cap")
	}
	return s.retrying(ctx, func(ctx context.Context) error {
		return completeScript.Run(ctx, s.rdb, []string{s.key(r.Key)},
			reservedValue(r), completedValue(r, rec), ttlMillis(r.TTL)).Err()
	})
}

// Release implements [webagents.IdempotencyStore].
func (s *Store) Release(ctx context.Context, r webagents.IdempotencyReservation) error {
	return s.retrying(ctx, func(ctx context.Context) error {
		return releaseScript.Run(ctx, s.rdb, []string{s.key(r.Key)}, reservedValue(r)).Err()
	})
}

func (s *Store) retrying(ctx context.Context, op func(context.Context) error) error {
	end := time.Now().Add(s.retry)
	backoff := 50 * time.Millisecond
	for {
		octx, cancel := context.WithTimeout(ctx, s.timeout)
		err := boundedErr(octx, s.watches, op)
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

// watchesContext reports whether rdb stops waiting for a reply when the
// call's context ends: go-redis watches a context's deadline while it waits
// only on a client made with ContextTimeoutEnabled.
func watchesContext(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// bounded returns fn's result, or ctx's error as soon as ctx ends. On a
// client that watches the context (watches), fn is called directly. On one
// that does not, fn runs in a goroutine; if ctx ends first, the call ends
// in the background at the client's own ReadTimeout and its result is
// dropped. Either way a command already sent may still run in Redis, as it
// may whenever a reply is lost.
func bounded[T any](ctx context.Context, watches bool, fn func(context.Context) (T, error)) (T, error) {
	if watches {
		return fn(ctx)
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished too: keep its answer
			return r.v, r.err
		default:
			var zero T
			return zero, ctx.Err()
		}
	}
}

// boundedErr is [bounded] for a call with no result.
func boundedErr(ctx context.Context, watches bool, fn func(context.Context) error) error {
	_, err := bounded(ctx, watches, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
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
