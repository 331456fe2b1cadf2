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
	// DefaultMaxClientReservations is how many records one client may hold
	// (the memory store's per-client default share of keys).
	DefaultMaxClientReservations = 1000
	// DefaultMaxClientBytes is how many bytes of responses one client's
	// records may hold (64 MiB): an average of 64 KiB per record at
	// [DefaultMaxClientReservations], far above a typical batch response,
	// so that the record count bounds an ordinary client and the bytes a
	// client storing large responses: at most 64 of 1 MiB, where the count
	// alone would let it store 1,000 (1 GiB).
	DefaultMaxClientBytes = 64 << 20
)

// Options configures [NewStore]. The zero value of each field is its
// documented default.
type Options struct {
	// Prefix starts every key; "" means [DefaultPrefix] ("webagents").
	Prefix string
	// OpTimeout bounds each Redis call; 0 means [DefaultOpTimeout] (2 s).
	OpTimeout time.Duration
	// RetryAfter is what a refusal sent while Redis is unreachable or full
	// tells the client; 0 means [DefaultRetryAfter] (2 s).
	RetryAfter time.Duration
	// CompleteRetry is how long Complete keeps trying to store a finished
	// response while Redis fails; 0 means [DefaultCompleteRetry] (10 s).
	CompleteRetry time.Duration
	// MaxClientReservations bounds the records one client (the
	// reservation's Client: its session, or its address) holds in Redis,
	// running and completed, until each expires; past it, Reserve refuses
	// with 503 idempotency_unavailable and a Retry-After of when its oldest
	// record expires. 0 means [DefaultMaxClientReservations] (1,000); a
	// negative value means no bound. Replays, 409s and 422s take no room.
	MaxClientReservations int
	// MaxClientBytes bounds the bytes of the responses one client's records
	// hold. A reservation counts as the largest response
	// ([webagents.TransportLimitBytes]) while its batch runs and as its
	// response once stored, so the bound holds however many batches the
	// client runs at once. Past it, Reserve refuses with 503
	// idempotency_unavailable and a Retry-After of when its oldest record
	// expires, or sooner, a batch deadline, when the room is held by its
	// running batches. 0 means [DefaultMaxClientBytes] (64 MiB); a negative
	// value means no bound.
	MaxClientBytes int
	// Logger receives the start and the end of each outage, and of each
	// time Redis is full; nil is silent.
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
	maxClient  int // -1: unbounded
	maxBytes   int // -1: unbounded
	outage     outage
	full       outage // Redis refusing writes (maxmemory)
}

// NewStore returns a store keeping its records in rdb; nil options mean
// the defaults.
func NewStore(rdb redis.UniversalClient, opts *Options) *Store {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	s := &Store{rdb: rdb, watches: watchesContext(rdb), prefix: o.Prefix, timeout: o.OpTimeout, retryAfter: o.RetryAfter, retry: o.CompleteRetry,
		maxClient: bound(o.MaxClientReservations, DefaultMaxClientReservations), maxBytes: bound(o.MaxClientBytes, DefaultMaxClientBytes)}
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
	s.outage = outage{logger: o.Logger, what: "idempotency store unavailable", back: "idempotency store available again"}
	s.full = outage{logger: o.Logger, what: "idempotency store full: Redis refuses writes (maxmemory); keyed batches are refused, replays and pacing go on",
		back: "idempotency store no longer full"}
	return s
}

// bound is an option's value: 0 means def, negative -1 (no bound).
func bound(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// key is the record's key: the adapter's key is already an opaque hash;
// it is also the hash tag. The "idem2" namespace holds string records
// (see [reservedValue]); "idem" held the hashes of earlier versions.
func (s *Store) key(k string) string { return s.prefix + ":idem2:{" + k + "}" }

// clientKeys are the keys of a client's share: a sorted set of its
// records' keys by expiry (Unix ms), and a hash of the bytes each is
// charged, with their sum in the field "total". Their hash tag is the
// client's, so a script can update both in a Cluster.
func (s *Store) clientKeys(client string) []string {
	k := s.prefix + ":client:{" + client + "}"
	return []string{k, k + ":bytes"}
}

// A record is one string, so that a reservation is one plain command
// (SET NX GET) and a completion or release one short script:
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
// type is not ours, not an error to retry. allow-oom: a batch that ran
// stores its response even when Redis is full (refusing writes), rather
// than leave its key "in progress" for the window; reservations are
// refused then, so Redis exceeds maxmemory by at most the responses of the
// batches that were running when it filled, each at most 1 MiB.
var completeScript = redis.NewScript(`#!lua flags=allow-oom
local v = redis.pcall('GET', KEYS[1])
if v ~= false and v ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`)

// releaseScript drops the reservation ARGV[1] if the key still holds it.
var releaseScript = redis.NewScript(`#!lua flags=allow-oom
if redis.pcall('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// chargeScript takes room in a client's share (KEYS: [Store.clientKeys])
// for a new reservation of the record ARGV[1] living ARGV[2] ms, charged
// ARGV[3] bytes ([runningCharge]), within ARGV[4] records and ARGV[5]
// bytes (negative: no bound). It first drops the records that have expired. It returns 1 when
// it charged the record, 0 when the record was charged already (a replay,
// a poll, a resent command), or -1-wait when the share is full, wait (ms)
// being when its oldest record expires, or at most ARGV[6] (a batch
// deadline) when the bytes are full and some are a running batch's.
// Redis's clock (TIME) keeps the expiries comparable across instances.
var chargeScript = redis.NewScript(`#!lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then
  local freed, ran = 0, 0
  for _, c in ipairs(redis.call('HMGET', KEYS[2], unpack(gone))) do
    c = tonumber(c) or 0
    freed = freed + c
    if c == tonumber(ARGV[3]) then ran = ran + 1 end
  end
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('HDEL', KEYS[2], unpack(gone))
  redis.call('HINCRBY', KEYS[2], 'total', -freed)
  redis.call('HINCRBY', KEYS[2], 'running', -ran)
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local n = redis.call('ZCARD', KEYS[1])
local total = tonumber(redis.call('HGET', KEYS[2], 'total') or '0')
local charge, maxn, maxb = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local overn = maxn >= 0 and n >= maxn
local overb = maxb >= 0 and total + charge > maxb
if overn or overb then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local wait = math.max(tonumber(oldest[2] or now) - now, 0)
  if overb and not overn and tonumber(redis.call('HGET', KEYS[2], 'running') or '0') > 0 then
    wait = math.min(wait, tonumber(ARGV[6]))
  end
  return -1 - wait
end
local exp = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], charge)
redis.call('HINCRBY', KEYS[2], 'total', charge)
redis.call('HINCRBY', KEYS[2], 'running', 1)
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIREAT', KEYS[1], last + 1000)
redis.call('PEXPIREAT', KEYS[2], last + 1000)
return 1
`)

// rechargeScript updates a client's share (KEYS: [Store.clientKeys]) once
// the record ARGV[1] ends running: with ARGV[3] "" it was released and
// leaves the share; otherwise it now holds ARGV[3] bytes and lives ARGV[2]
// ms. ARGV[4] is [runningCharge]. A record the share lacks (Redis lost the reservation, and Complete
// stored the response all the same) is added. allow-oom: it runs when
// Redis is full, to give room back or to count a response Complete stored.
var rechargeScript = redis.NewScript(`#!lua flags=allow-oom
local old = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
redis.call('HINCRBY', KEYS[2], 'total', -old)
if old == tonumber(ARGV[4]) then
  redis.call('HINCRBY', KEYS[2], 'running', -1)
end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
local t = redis.call('TIME')
local exp = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HINCRBY', KEYS[2], 'total', tonumber(ARGV[3]))
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIREAT', KEYS[1], last + 1000)
redis.call('PEXPIREAT', KEYS[2], last + 1000)
return 1
`)

func ttlMillis(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }

// runningCharge is what a running reservation counts against its
// client's bytes: more than the largest response it may store, so that
// the scripts tell a running reservation from a stored response.
const runningCharge = webagents.TransportLimitBytes + 1

// isOOM reports whether Redis refused a write for lack of memory
// (maxmemory with noeviction).
func isOOM(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "OOM ") }

// Reserve implements [webagents.IdempotencyStore] with one SET NX GET
// (Redis 7.0 or later) and, in the same round trip, a script charging the
// client's share. While Redis fails it refuses with 503
// idempotency_unavailable: a keyed batch never runs without its
// reservation. While Redis is full it still answers replays, 409s and
// 422s, and refuses new reservations the same way.
func (s *Store) Reserve(ctx context.Context, r webagents.IdempotencyReservation) (*webagents.IdempotencyRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	mine := reservedValue(r)
	set := func(ctx context.Context, c redis.Cmdable) *redis.StatusCmd {
		return c.SetArgs(ctx, s.key(r.Key), mine, redis.SetArgs{Mode: "NX", Get: true, TTL: max(r.TTL, time.Millisecond)})
	}
	shared := s.maxClient >= 0 || s.maxBytes >= 0
	// What the round trip found: the record there, and the charge
	// script's answer (see chargeScript). A value, not variables the call
	// sets: on a client that does not watch the context, the call may
	// still run after Reserve has given up on it.
	type found struct {
		old       string
		charged   int64
		chargeErr error
	}
	f, err := bounded(ctx, s.watches, func(ctx context.Context) (found, error) {
		if !shared {
			old, err := set(ctx, s.rdb).Result()
			return found{old: old}, err
		}
		// One round trip: charge the client's share and reserve. Both
		// run whatever the other's outcome, and what one did that the
		// other's outcome voids is undone below.
		keys := s.clientKeys(r.Client)
		args := []any{r.Key, ttlMillis(r.TTL), runningCharge, s.maxClient, s.maxBytes, ttlMillis(time.Until(r.Deadline))}
		pipe := s.rdb.Pipeline()
		charge := chargeScript.EvalSha(ctx, pipe, keys, args...)
		cmd := set(ctx, pipe)
		_, _ = pipe.Exec(ctx)
		var f found
		f.charged, f.chargeErr = charge.Int64()
		if f.chargeErr != nil && redis.HasErrorPrefix(f.chargeErr, "NOSCRIPT") {
			f.charged, f.chargeErr = chargeScript.Run(ctx, s.rdb, keys, args...).Int64()
		}
		var err error
		f.old, err = cmd.Result()
		return f, err
	})
	old, charged, chargeErr := f.old, f.charged, f.chargeErr
	if isOOM(err) {
		// The charge may have run just before Redis filled: give it back.
		s.uncharge(ctx, r, charged)
		return s.reserveFull(ctx, r)
	}
	if errors.Is(err, redis.Nil) || (err == nil && old == mine) {
		// Absent, so now ours; or ours already: the client resent the SET
		// after losing its reply (go-redis retries by default), and the
		// token in the value is this request's alone.
		s.outage.ok()
		s.full.ok()
		if shared && (chargeErr != nil || charged < 0) {
			// Over its share, or its share could not be charged: undo the
			// reservation (best effort, within this call's time: if it
			// fails, the key answers 409 until it expires) and refuse.
			_ = boundedErr(ctx, s.watches, func(ctx context.Context) error {
				return releaseScript.Run(ctx, s.rdb, []string{s.key(r.Key)}, mine).Err()
			})
			if chargeErr != nil {
				if isOOM(chargeErr) {
					return nil, s.fullError()
				}
				s.outage.fail(chargeErr)
				return nil, s.unavailable()
			}
			e := s.unavailable()
			e.Message = "Too many requests with an Idempotency-Key from this client are stored; try again later."
			e.RetryAfter = max(time.Duration(-1-charged)*time.Millisecond, time.Second)
			return nil, e
		}
		return nil, nil
	}
	if err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		// A key of another type this package did not write: Redis works.
		s.outage.ok()
		s.uncharge(ctx, r, charged)
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
	s.full.ok()
	// Only new reservations take room: a replay, a 409 or a 422 gives back
	// what it was charged (nothing, when the client holds the record).
	s.uncharge(ctx, r, charged)
	return s.existing(old)
}

// existing decodes a record Reserve found: one this package did not write
// is refused, never run.
func (s *Store) existing(v string) (*webagents.IdempotencyRecord, error) {
	rec, err := decodeRecord(v)
	if err != nil {
		return nil, s.unavailable()
	}
	return rec, nil
}

// uncharge gives back the charge Reserve took for a reservation it did not
// make (best effort, within ctx).
func (s *Store) uncharge(ctx context.Context, r webagents.IdempotencyReservation, charged int64) {
	if charged == 1 {
		s.recharge(ctx, r, "")
	}
}

// recharge runs [rechargeScript] for r (best effort, within ctx: a share
// left charged more than it holds frees itself as the record expires).
func (s *Store) recharge(ctx context.Context, r webagents.IdempotencyReservation, bytes string) {
	if s.maxClient < 0 && s.maxBytes < 0 {
		return
	}
	_ = boundedErr(ctx, s.watches, func(ctx context.Context) error {
		return rechargeScript.Run(ctx, s.rdb, s.clientKeys(r.Client), r.Key, ttlMillis(r.TTL), bytes, runningCharge).Err()
	})
}

// reserveFull answers a reservation Redis refused for lack of memory:
// the record already there, read with a GET (reads work when Redis is
// full), or a refusal.
func (s *Store) reserveFull(ctx context.Context, r webagents.IdempotencyReservation) (*webagents.IdempotencyRecord, error) {
	s.outage.ok()
	s.full.fail(errOOM)
	v, err := bounded(ctx, s.watches, func(ctx context.Context) (string, error) {
		return s.rdb.Get(ctx, s.key(r.Key)).Result()
	})
	if err != nil {
		return nil, s.fullError()
	}
	return s.existing(v)
}

func (s *Store) fullError() *webagents.Error {
	e := s.unavailable()
	e.Message = "The idempotency store is full; try again later."
	return e
}

func (s *Store) unavailable() *webagents.Error {
	return &webagents.Error{Status: 503, Code: webagents.CodeIdempotencyUnavailable,
		Message: "Requests with an Idempotency-Key cannot be accepted right now; try again later.", RetryAfter: s.retryAfter}
}

var (
	errMalformed = errors.New("redisstore: malformed record")
	errOOM       = errors.New("OOM command not allowed when used memory > 'maxmemory'")
)

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
// alone. It stores the response also when Redis is full. It retries for
// up to Options.CompleteRetry while Redis fails; if it still cannot, the
// record stays "in progress" until its window ends (retries get 409), so
// the batch is never run twice.
func (s *Store) Complete(ctx context.Context, r webagents.IdempotencyReservation, rec webagents.IdempotencyRecord) error {
	if len(rec.Body) > webagents.TransportLimitBytes {
		return errors.New("redisstore: response larger than the transport cap")
	}
	keys, args := []string{s.key(r.Key)}, []any{reservedValue(r), completedValue(r, rec), ttlMillis(r.TTL)}
	if s.maxClient < 0 && s.maxBytes < 0 {
		return s.retrying(ctx, func(ctx context.Context) error {
			return completeScript.Run(ctx, s.rdb, keys, args...).Err()
		})
	}
	// The reservation's charge becomes its response's bytes, in the same
	// round trip (a Cluster sends each script to its own shard). Should
	// the response not be stored (another request took the key over, as
	// the same client: the key is its hash), the share counts this
	// response for that request's until it completes; both scripts can
	// run again harmlessly when the call is retried.
	ckeys, cargs := s.clientKeys(r.Client), []any{r.Key, ttlMillis(r.TTL), len(rec.Body), runningCharge}
	return s.retrying(ctx, func(ctx context.Context) error {
		pipe := s.rdb.Pipeline()
		done := completeScript.EvalSha(ctx, pipe, keys, args...)
		recharge := rechargeScript.EvalSha(ctx, pipe, ckeys, cargs...)
		_, _ = pipe.Exec(ctx)
		if !redis.HasErrorPrefix(done.Err(), "NOSCRIPT") && !redis.HasErrorPrefix(recharge.Err(), "NOSCRIPT") {
			return done.Err() // the share's update is best effort
		}
		if err := completeScript.Run(ctx, s.rdb, keys, args...).Err(); err != nil {
			return err
		}
		_ = rechargeScript.Run(ctx, s.rdb, ckeys, cargs...).Err()
		return nil
	})
}

// Release implements [webagents.IdempotencyStore].
func (s *Store) Release(ctx context.Context, r webagents.IdempotencyReservation) error {
	var released bool
	err := s.retrying(ctx, func(ctx context.Context) error {
		n, err := releaseScript.Run(ctx, s.rdb, []string{s.key(r.Key)}, reservedValue(r)).Int()
		released = n == 1
		return err
	})
	if released {
		rctx, cancel := context.WithTimeout(ctx, s.timeout)
		s.recharge(rctx, r, "")
		cancel()
	}
	return err
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

// outage logs the start (what) and the end (back) of a run of failures,
// once each.
type outage struct {
	logger     *slog.Logger
	what, back string
	failing    atomic.Bool
}

func (o *outage) fail(err error) {
	if o.failing.CompareAndSwap(false, true) && o.logger != nil {
		o.logger.Error("redisstore: "+o.what, slog.String("error", err.Error()))
	}
}

func (o *outage) ok() {
	if o.failing.Load() && o.failing.CompareAndSwap(true, false) && o.logger != nil {
		o.logger.Info("redisstore: " + o.back)
	}
}

// hashKey names a pacing scope without revealing it (scopes hold session
// keys).
func hashKey(scope string) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:16])
}
