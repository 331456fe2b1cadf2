package redisstore

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbridge/agentbridge/webagents"
)

// LimiterOptions configures [NewLimiter]. The zero value of each field
// but Interval is its documented default.
type LimiterOptions struct {
	// Interval is the least time between two starts of one session's
	// operations, across batches and instances. 0 disables pacing.
	Interval time.Duration
	// MaxWait is the longest an operation may queue before it is refused
	// with 429 rate_limited; 0 means [DefaultMaxWait] (10 s).
	MaxWait time.Duration
	// FailOpen lets operations run unpaced while Redis is unreachable; the
	// default (false) refuses them with 503 unavailable.
	FailOpen bool
	// Prefix starts every key; "" means [DefaultPrefix].
	Prefix string
	// OpTimeout bounds each Redis call; 0 means [DefaultOpTimeout] (2 s).
	OpTimeout time.Duration
	// RetryAfter is what a refusal while Redis is unreachable tells the
	// client, and how often, while it is, one call tries it again (the
	// others fail open or closed at once); 0 means [DefaultRetryAfter] (2 s).
	RetryAfter time.Duration
	// Logger receives the start and the end of each outage; nil is silent.
	Logger *slog.Logger
}

// Limiter is a [webagents.Limiter] in Redis: the spacing of one session's
// operation starts holds across every instance sharing the Redis. It is
// safe for concurrent use and starts no goroutines.
type Limiter struct {
	rdb     redis.UniversalClient
	watches bool // see [watchesContext]
	opts    LimiterOptions
	out     outage
	// probeAt is, while Redis fails, when (Unix ns) the next call may try
	// it again; calls before that fail (open or closed) at once.
	probeAt atomic.Int64
	// now is time.Now, or a test's clock for probeAt (pacing itself is on
	// Redis's clock).
	now func() time.Time
}

// NewLimiter returns a limiter keeping its state in rdb.
func NewLimiter(rdb redis.UniversalClient, opts *LimiterOptions) *Limiter {
	l := &Limiter{rdb: rdb, watches: watchesContext(rdb), now: time.Now}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxWait <= 0 {
		l.opts.MaxWait = DefaultMaxWait
	}
	if l.opts.Prefix == "" {
		l.opts.Prefix = DefaultPrefix
	}
	if l.opts.OpTimeout <= 0 {
		l.opts.OpTimeout = DefaultOpTimeout
	}
	if l.opts.RetryAfter <= 0 {
		l.opts.RetryAfter = DefaultRetryAfter
	}
	l.out = outage{logger: l.opts.Logger, what: "limiter unavailable", back: "limiter available again"}
	return l
}

// paceScript reserves the session's next slot on Redis's clock: it
// returns the wait in microseconds, or -1-wait when that is over ARGV[2]
// (nothing reserved). allow-oom: pacing goes on when Redis is full
// (maxmemory with noeviction refuses other writes, such as a store's
// filling it): a session's key is one short string that expires a second
// after its last slot, so the keys of the sessions active in the last
// MaxWait are what it can add past maxmemory.
var paceScript = redis.NewScript(`#!lua flags=allow-oom
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local wait = slot - now
if wait > tonumber(ARGV[2]) then return -1 - wait end
local nxt = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
return wait
`)

// unavailable is the answer while Redis fails: nil with FailOpen, else 503.
func (l *Limiter) unavailable() error {
	if l.opts.FailOpen {
		return nil
	}
	return &webagents.Error{Status: 503, Code: webagents.CodeUnavailable,
		Message: "Pacing is unavailable; try again later.", RetryAfter: l.opts.RetryAfter}
}

// Wait implements [webagents.Limiter].
func (l *Limiter) Wait(ctx context.Context, session string) error {
	if l.opts.Interval <= 0 {
		return ctx.Err()
	}
	if l.out.failing.Load() {
		// Redis failed: one call per RetryAfter tries it again, the others
		// do not wait OpTimeout for it each (with FailOpen, a batch of
		// many operations would otherwise spend OpTimeout on each).
		next := l.probeAt.Load()
		now := l.now().UnixNano()
		if now < next || !l.probeAt.CompareAndSwap(next, now+int64(l.opts.RetryAfter)) {
			return l.unavailable()
		}
	}
	rctx, cancel := context.WithTimeout(ctx, l.opts.OpTimeout)
	wait, err := bounded(rctx, l.watches, func(ctx context.Context) (int64, error) {
		return paceScript.Run(ctx, l.rdb, []string{l.opts.Prefix + ":pace:{" + hashKey(session) + "}"},
			strconv.FormatInt(l.opts.Interval.Microseconds(), 10), strconv.FormatInt(l.opts.MaxWait.Microseconds(), 10)).Int64()
	})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.probeAt.Store(l.now().Add(l.opts.RetryAfter).UnixNano())
		l.out.fail(err)
		return l.unavailable()
	}
	l.out.ok()
	if wait < 0 {
		// Retry-After: when the wait will be within MaxWait again.
		over := time.Duration(-1-wait)*time.Microsecond - l.opts.MaxWait
		return &webagents.Error{Status: 429, Code: webagents.CodeRateLimited, Message: "Too many requests; try again later.",
			RetryAfter: max(over, time.Second)}
	}
	if wait == 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(wait) * time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
