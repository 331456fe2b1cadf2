package webagents

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// SessionLimiter is a [Limiter] that keeps at least Interval between the
// starts of any two operations of one session, across batches. It refuses
// (429 rate_limited) an operation that would have to wait longer than
// MaxWait, and a new session when MaxSessions sessions are being paced.
// It starts no goroutines and is safe for concurrent use.
type SessionLimiter struct {
	// Interval is the least time between two starts of one session.
	Interval time.Duration
	// MaxWait is the longest an operation may queue; 0 means 10 s.
	MaxWait time.Duration
	// MaxSessions bounds the sessions tracked at once; 0 means 10,000.
	MaxSessions int

	mu   sync.Mutex
	next map[string]time.Time // earliest next start per session
}

// Wait implements [Limiter].
func (l *SessionLimiter) Wait(ctx context.Context, session string) error {
	if l.Interval <= 0 {
		return ctx.Err()
	}
	maxWait := l.MaxWait
	if maxWait <= 0 {
		maxWait = 10 * time.Second
	}
	maxSessions := l.MaxSessions
	if maxSessions <= 0 {
		maxSessions = 10_000
	}
	now := time.Now()
	l.mu.Lock()
	if l.next == nil {
		l.next = map[string]time.Time{}
	}
	slot, known := l.next[session]
	if !known && len(l.next) >= maxSessions {
		var first time.Time // the earliest slot: when a session frees up
		for k, t := range l.next {
			if !t.After(now) {
				delete(l.next, k)
			} else if first.IsZero() || t.Before(first) {
				first = t
			}
		}
		if len(l.next) >= maxSessions {
			l.mu.Unlock()
			return rateLimited(first.Sub(now))
		}
	}
	if slot.Before(now) {
		slot = now
	}
	wait := slot.Sub(now)
	if wait > maxWait {
		l.mu.Unlock()
		return rateLimited(wait - maxWait) // when the wait is within MaxWait again
	}
	l.next[session] = slot.Add(l.Interval)
	l.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rateLimited is the 429 of a [SessionLimiter], with a Retry-After of
// after, at least a second.
func rateLimited(after time.Duration) *Error {
	e := errorf(CodeRateLimited, "Too many requests; try again later.")
	e.RetryAfter = max(after, time.Second)
	return e
}

func netipAddrPort(s string) (netip.AddrPort, error) { return netip.ParseAddrPort(s) }
