package webagents

import (
	"context"
	"slices"
	"sync"
	"time"
)

// IdempotencyRecord is what an IdempotencyStore keeps for one key.
type IdempotencyRecord struct {
	// Fingerprint is the SHA-256 of the request body.
	Fingerprint [32]byte
	// Completed is false while the first request is still running.
	Completed bool
	// Status and Body are the stored response, once Completed.
	Status int
	Body   []byte
}

// IdempotencyStore keeps the responses of requests that carried an
// Idempotency-Key header, so that a batch runs at most once per (session,
// key) within a window. Keys are opaque hashes. A Handler completes a
// reservation only for a batch that started executing; a request refused
// before any operation ran is released, so a retry with the key runs. Only
// the status and the body are replayed: headers an action set on the first
// response (such as a sign-in cookie) are not. Implementations must be safe
// for concurrent use.
type IdempotencyStore interface {
	// Reserve atomically records an in-progress request under key unless a
	// live record exists. It returns the existing record, or nil when it
	// made the reservation. Records expire ttl after they are stored.
	Reserve(ctx context.Context, key string, fingerprint [32]byte, ttl time.Duration) (*IdempotencyRecord, error)
	// Complete replaces the reservation with the finished response.
	Complete(ctx context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error
	// Release drops a reservation that will not complete.
	Release(ctx context.Context, key string) error
}

// DefaultIdempotencyEntries is the capacity of NewMemoryIdempotencyStore(0).
const DefaultIdempotencyEntries = 10_000

// MemoryIdempotencyStore is an in-memory IdempotencyStore with a bounded
// number of entries. When it is full, expired entries are dropped first,
// then the oldest completed one; if every entry is still running, Reserve
// refuses with 429 rate_limited. It starts no goroutines. The zero value is
// ready to use and holds up to DefaultIdempotencyEntries keys.
type MemoryIdempotencyStore struct {
	mu      sync.Mutex
	max     int
	entries map[string]*memoryEntry
	order   []string // keys in insertion order, possibly stale
}

type memoryEntry struct {
	rec     IdempotencyRecord
	expires time.Time
}

// NewMemoryIdempotencyStore returns a store holding up to maxEntries keys;
// 0 means DefaultIdempotencyEntries.
func NewMemoryIdempotencyStore(maxEntries int) *MemoryIdempotencyStore {
	s := &MemoryIdempotencyStore{max: maxEntries}
	s.init()
	return s
}

// init applies the defaults of the zero value; called with s.mu held (or
// before s is shared).
func (s *MemoryIdempotencyStore) init() {
	if s.max <= 0 {
		s.max = DefaultIdempotencyEntries
	}
	if s.entries == nil {
		s.entries = map[string]*memoryEntry{}
	}
}

// Reserve implements IdempotencyStore.
func (s *MemoryIdempotencyStore) Reserve(_ context.Context, key string, fingerprint [32]byte, ttl time.Duration) (*IdempotencyRecord, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if e, ok := s.entries[key]; ok && now.Before(e.expires) {
		rec := e.rec
		return &rec, nil
	}
	if len(s.entries) >= s.max && !s.evict(now) {
		return nil, errorf(CodeRateLimited, "Too many requests are in progress.")
	}
	s.entries[key] = &memoryEntry{rec: IdempotencyRecord{Fingerprint: fingerprint}, expires: now.Add(ttl)}
	s.appendOrder(key)
	return nil, nil
}

// appendOrder records key as the newest entry. Released and re-reserved
// keys leave stale positions behind; they are dropped once they outnumber
// the capacity, so the bookkeeping stays bounded even when the store never
// fills.
func (s *MemoryIdempotencyStore) appendOrder(key string) {
	s.order = append(s.order, key)
	if len(s.order) <= 2*s.max {
		return
	}
	seen := make(map[string]bool, len(s.entries))
	kept := make([]string, 0, len(s.entries))
	for i := len(s.order) - 1; i >= 0; i-- { // a key's last position is its live one
		k := s.order[i]
		if _, live := s.entries[k]; live && !seen[k] {
			seen[k] = true
			kept = append(kept, k)
		}
	}
	slices.Reverse(kept)
	s.order = kept
}

// evict makes room for one entry; it reports whether it could.
func (s *MemoryIdempotencyStore) evict(now time.Time) bool {
	// Drop stale order entries and expired records from the front.
	for len(s.order) > 0 {
		k := s.order[0]
		e, ok := s.entries[k]
		if ok && now.Before(e.expires) {
			break
		}
		delete(s.entries, k)
		s.order = s.order[1:]
	}
	if len(s.entries) < s.max {
		return true
	}
	for i, k := range s.order {
		if e, ok := s.entries[k]; ok && e.rec.Completed {
			delete(s.entries, k)
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			return true
		}
	}
	return false
}

// Complete implements IdempotencyStore.
func (s *MemoryIdempotencyStore) Complete(_ context.Context, key string, rec IdempotencyRecord, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	rec.Completed = true
	if e, ok := s.entries[key]; ok {
		e.rec = rec
		e.expires = time.Now().Add(ttl)
		return nil
	}
	s.entries[key] = &memoryEntry{rec: rec, expires: time.Now().Add(ttl)}
	s.appendOrder(key)
	return nil
}

// Release implements IdempotencyStore.
func (s *MemoryIdempotencyStore) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok && !e.rec.Completed {
		delete(s.entries, key)
	}
	return nil
}

// Len returns the number of live entries (for tests and metrics).
func (s *MemoryIdempotencyStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
