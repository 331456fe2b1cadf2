package webagents

import (
	"context"
	"slices"
	"sync"
	"time"
)

// IdempotencyReservation is what a [Handler] asks an [IdempotencyStore] to
// record before it runs a batch that carried an Idempotency-Key header.
type IdempotencyReservation struct {
	// Key is an opaque hash of the (scope, key) pair, the scope being the
	// credential as presented ([WithCredential]), else the session, else the
	// client address: neither a session token nor the raw key reaches the
	// store.
	Key string
	// Client is an opaque hash of the client the record is charged to (the
	// session, or the client address of a request without one), so that a
	// store can bound each client's share.
	Client string
	// Fingerprint is the SHA-256 of the request body.
	Fingerprint [32]byte
	// TTL is how long the record lives: for Reserve, the idempotency window
	// plus the batch deadline (so that a window shorter than the deadline
	// cannot let a running batch's reservation expire); for Complete, the
	// window, from the completion.
	TTL time.Duration
	// Deadline is the latest the batch can end (its start plus the batch
	// deadline): a retry before then is told to come back after it.
	Deadline time.Time
	// Token is a random value unique to this request: only the request
	// holding the reservation may complete or release it, so one whose
	// record expired and was taken over by another cannot overwrite it.
	Token string
}

// IdempotencyRecord is what an [IdempotencyStore] keeps for one key.
type IdempotencyRecord struct {
	// Fingerprint is the SHA-256 of the request body.
	Fingerprint [32]byte
	// Completed is false while the first request is still running.
	Completed bool
	// Deadline is, for a running request, the latest its batch can end.
	Deadline time.Time
	// Status and Body are the stored response, once Completed.
	Status int
	Body   []byte
}

// IdempotencyStore keeps the responses of requests that carried an
// Idempotency-Key header, so that a batch runs at most once per (session,
// key) within a window. A [Handler] completes a reservation only for a batch
// that started executing; a request refused before any operation ran is
// released, so a retry with the key runs. A reservation whose batch started
// is never released: if Complete fails, the Handler logs it and the key
// answers 409 until the record expires, rather than run the batch again. Only the status and the body are
// stored and replayed: headers an action set on the first response (such as
// a sign-in cookie) are not, so no credential reaches the store or a
// replay. A replayed sign-in says what happened the first time; it does not
// sign the retrying client in.
//
// A store must never drop a live record (one inside its window) to make
// room: that would let a retry run an irreversible action twice. When it
// has no room it refuses the reservation instead, with an *[Error] (such as
// 503 [CodeIdempotencyUnavailable] with RetryAfter set), which the Handler
// sends as is. Implementations must be safe for concurrent use.
type IdempotencyStore interface {
	// Reserve atomically records an in-progress request under r.Key unless
	// a live record exists. It returns the existing record, or nil when it
	// made the reservation. Records expire r.TTL after they are stored.
	Reserve(ctx context.Context, r IdempotencyReservation) (*IdempotencyRecord, error)
	// Complete replaces r's reservation with the finished response, kept
	// for r.TTL from now. It does nothing when another request holds the
	// key. When the key holds nothing (a store that can lose records, such
	// as Redis after a failover, lost the reservation while the batch ran)
	// it should store the response all the same, so that a retry replays
	// it rather than run the batch again.
	Complete(ctx context.Context, r IdempotencyReservation, rec IdempotencyRecord) error
	// Release drops r's reservation, which will not complete; it does
	// nothing when r.Token no longer holds it.
	Release(ctx context.Context, r IdempotencyReservation) error
}

// Defaults of [MemoryIdempotencyStoreOptions].
const (
	// DefaultIdempotencyEntries is the number of keys a memory store holds.
	DefaultIdempotencyEntries = 10_000
	// DefaultIdempotencyBytes bounds the stored response bodies of a memory
	// store (64 MiB).
	DefaultIdempotencyBytes = 64 << 20
	// DefaultIdempotencyClientShare is the fraction (1/N) of a memory
	// store's keys and bytes one client may hold.
	DefaultIdempotencyClientShare = 10
)

// MemoryIdempotencyStoreOptions configures [NewMemoryIdempotencyStore]. The
// zero value of each field is its documented default.
type MemoryIdempotencyStoreOptions struct {
	// MaxEntries bounds the keys held, running and completed; 0 means
	// [DefaultIdempotencyEntries] (10,000).
	MaxEntries int
	// MaxBytes bounds the bytes of stored response bodies; 0 means
	// [DefaultIdempotencyBytes] (64 MiB). It is checked when a reservation is
	// made: a batch that is already running always stores its response, so
	// the store may exceed MaxBytes by the responses of the batches running
	// at that moment (each at most [TransportLimitBytes]).
	MaxBytes int
	// MaxClientEntries bounds the keys one client (session, or client
	// address without one) holds; 0 means MaxEntries/10.
	MaxClientEntries int
	// MaxClientBytes bounds the stored bytes of one client; 0 means
	// MaxBytes/10.
	MaxClientBytes int
}

// MemoryIdempotencyStore is an in-memory [IdempotencyStore] bounded by keys
// and by bytes of stored responses, overall and per client. It never drops
// a live record: expired records make room, and when there is none left a
// reservation is refused with 503 [CodeIdempotencyUnavailable] and a
// RetryAfter of when the oldest record (of the store, or of the client over
// its share) expires. It starts no goroutines. The zero value is ready to
// use with the defaults.
type MemoryIdempotencyStore struct {
	mu          sync.Mutex
	inited      bool
	max         int
	maxBytes    int
	clientMax   int
	clientBytes int
	bytes       int
	entries     map[string]*memoryEntry
	clients     map[string]*clientUsage
	order       []string // keys in insertion order, possibly stale
}

type memoryEntry struct {
	rec     IdempotencyRecord
	expires time.Time
	client  string
	token   string
}

type clientUsage struct{ entries, bytes int }

// NewMemoryIdempotencyStore returns a store with the given bounds; nil
// options mean all defaults.
func NewMemoryIdempotencyStore(opts *MemoryIdempotencyStoreOptions) *MemoryIdempotencyStore {
	s := &MemoryIdempotencyStore{}
	if opts != nil {
		s.max, s.maxBytes = opts.MaxEntries, opts.MaxBytes
		s.clientMax, s.clientBytes = opts.MaxClientEntries, opts.MaxClientBytes
	}
	s.init()
	return s
}

// init applies the defaults; called with s.mu held (or before s is shared).
func (s *MemoryIdempotencyStore) init() {
	if s.inited {
		return
	}
	s.inited = true
	if s.max <= 0 {
		s.max = DefaultIdempotencyEntries
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultIdempotencyBytes
	}
	if s.clientMax <= 0 {
		s.clientMax = max(s.max/DefaultIdempotencyClientShare, 1)
	}
	if s.clientBytes <= 0 {
		s.clientBytes = max(s.maxBytes/DefaultIdempotencyClientShare, 1)
	}
	s.entries = map[string]*memoryEntry{}
	s.clients = map[string]*clientUsage{}
}

// Reserve implements [IdempotencyStore].
func (s *MemoryIdempotencyStore) Reserve(_ context.Context, r IdempotencyReservation) (*IdempotencyRecord, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if e, ok := s.entries[r.Key]; ok {
		if now.Before(e.expires) {
			rec := e.rec
			return &rec, nil
		}
		s.remove(r.Key, e)
	}
	s.dropExpired(now)
	if len(s.entries) >= s.max || s.bytes >= s.maxBytes {
		return nil, storeFull(now, s.oldestExpiry(""))
	}
	if u := s.clients[r.Client]; u != nil && (u.entries >= s.clientMax || u.bytes >= s.clientBytes) {
		return nil, storeFull(now, s.oldestExpiry(r.Client))
	}
	s.entries[r.Key] = &memoryEntry{
		rec:     IdempotencyRecord{Fingerprint: r.Fingerprint, Deadline: r.Deadline},
		expires: now.Add(r.TTL),
		client:  r.Client,
		token:   r.Token,
	}
	s.charge(r.Client, 1, 0)
	s.appendOrder(r.Key)
	return nil, nil
}

// storeFull is the refusal of a reservation for lack of room.
func storeFull(now, free time.Time) *Error {
	e := errorf(CodeIdempotencyUnavailable, "Too many requests with an Idempotency-Key are stored; try again later.")
	e.RetryAfter = max(free.Sub(now), time.Second)
	return e
}

func (s *MemoryIdempotencyStore) charge(client string, entries, bytes int) {
	s.bytes += bytes
	u := s.clients[client]
	if u == nil {
		u = &clientUsage{}
		s.clients[client] = u
	}
	u.entries += entries
	u.bytes += bytes
	if u.entries <= 0 {
		delete(s.clients, client)
	}
}

func (s *MemoryIdempotencyStore) remove(key string, e *memoryEntry) {
	delete(s.entries, key)
	s.charge(e.client, -1, -len(e.rec.Body))
}

// oldestExpiry returns when the oldest live record (of client, or of any
// client when client is "") expires.
func (s *MemoryIdempotencyStore) oldestExpiry(client string) time.Time {
	for _, k := range s.order {
		if e, ok := s.entries[k]; ok && (client == "" || e.client == client) {
			return e.expires
		}
	}
	return time.Time{}
}

// dropExpired drops expired records and stale positions from the front of
// the insertion order. Every record lives for the store's window from its
// reservation (completion extends it by at most the batch deadline), so the
// front holds the oldest.
func (s *MemoryIdempotencyStore) dropExpired(now time.Time) {
	for len(s.order) > 0 {
		k := s.order[0]
		if e, ok := s.entries[k]; ok {
			if now.Before(e.expires) {
				return
			}
			s.remove(k, e)
		}
		s.order = s.order[1:]
	}
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

// Complete implements [IdempotencyStore]. It always stores the response of a
// batch that ran, even over the byte bound (see
// [MemoryIdempotencyStoreOptions.MaxBytes]).
func (s *MemoryIdempotencyStore) Complete(_ context.Context, r IdempotencyReservation, rec IdempotencyRecord) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	e, ok := s.entries[r.Key]
	if ok && !now.Before(e.expires) {
		s.remove(r.Key, e)
		ok = false
	}
	if !ok {
		// The reservation expired while the batch ran (past its window and
		// deadline) and nobody took the key over: store the response all
		// the same, so that a retry replays it. Over the bounds if need
		// be, as for every batch that ran.
		rec.Completed = true
		s.entries[r.Key] = &memoryEntry{rec: rec, expires: now.Add(r.TTL), client: r.Client, token: r.Token}
		s.charge(r.Client, 1, len(rec.Body))
		s.appendOrder(r.Key)
		return nil
	}
	if e.token != r.Token || e.rec.Completed {
		return nil // another request's
	}
	rec.Completed = true
	s.charge(e.client, 0, len(rec.Body)-len(e.rec.Body))
	e.rec = rec
	e.expires = now.Add(r.TTL)
	return nil
}

// Release implements [IdempotencyStore].
func (s *MemoryIdempotencyStore) Release(_ context.Context, r IdempotencyReservation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[r.Key]; ok && !e.rec.Completed && e.token == r.Token {
		s.remove(r.Key, e)
	}
	return nil
}

// Len returns the number of entries (for tests and metrics).
func (s *MemoryIdempotencyStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Bytes returns the bytes of stored response bodies (for tests and metrics).
func (s *MemoryIdempotencyStore) Bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}
