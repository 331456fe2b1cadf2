package wire

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrOverBudget is returned by Budget.Reserve, and by Push of a queue the
// budget evicted, when the bytes held by all the budget's holders together
// would exceed its limit and the holder asking is the slowest.
var ErrOverBudget = errors.New("write budget of the whole server exhausted")

// Holder holds bytes against a [Budget]: a [Queue], or another buffer of
// outgoing data.
type Holder interface {
	// Held returns the bytes the holder holds. It must not block.
	Held() int64
	// Since returns the budget's [Budget.Tick] at which the holder last
	// made progress (wrote bytes, or started holding any): the smaller,
	// the longer its reader has taken nothing. It is 0 when the holder
	// holds nothing. It must not block.
	Since() uint64
	// Evict drops everything the holder holds, releasing it from the
	// budget before it returns, and ends the holder with err. It must not
	// take the budget's lock (it is not held), nor block.
	Evict(err error)
}

// Budget bounds the bytes that several holders (the write queues of all
// of a server's clients, its event streams) hold together. When a
// reservation does not fit, the slowest holder is evicted, until it fits:
// of those holding bytes, the one that has gone longest without making
// progress (its [Holder.Since] is the oldest), the one holding the most
// among equals. Progress, not size, picks it: a reader that keeps up can
// hold a large write for a moment, while one that has stopped reading
// holds the same bytes for ever. Its methods are safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64
	tick  atomic.Uint64

	mu      sync.Mutex
	holders map[Holder]struct{}
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, holders: map[Holder]struct{}{}}
}

// Add registers h, so that it may be evicted.
func (b *Budget) Add(h Holder) {
	b.mu.Lock()
	b.holders[h] = struct{}{}
	b.mu.Unlock()
}

// Remove unregisters h.
func (b *Budget) Remove(h Holder) {
	b.mu.Lock()
	delete(b.holders, h)
	b.mu.Unlock()
}

// Used returns the bytes reserved and not yet released.
func (b *Budget) Used() int64 { return b.used.Load() }

// Limit returns the budget's limit.
func (b *Budget) Limit() int64 { return b.limit }

// Tick returns a new, larger number each call: the clock of
// [Holder.Since].
func (b *Budget) Tick() uint64 { return b.tick.Add(1) }

// Reserve takes n bytes for self. When they do not fit, it evicts the
// slowest holder and tries again; when that holder is self, or nothing
// can be evicted, or self is no longer one of the budget's holders (it was
// evicted or removed meanwhile), it returns ErrOverBudget and takes
// nothing. A
// reservation larger than the whole budget succeeds only when nothing else
// is held, so that one large frame to a client that reads still goes. The
// caller must hold no lock an Evict could take.
func (b *Budget) Reserve(self Holder, n int64) error {
	for {
		u := b.used.Add(n)
		if u <= b.limit || u == n {
			return nil
		}
		b.used.Add(-n)
		b.mu.Lock()
		if _, live := b.holders[self]; !live {
			// Evicted or removed meanwhile: it evicts nobody.
			b.mu.Unlock()
			return ErrOverBudget
		}
		var victim Holder
		var most int64
		var oldest uint64
		for h := range b.holders {
			held := h.Held()
			if held == 0 {
				continue
			}
			since := h.Since()
			if since == 0 {
				since = 1 // held bytes, its tick not yet stored: among the oldest
			}
			if victim == nil || since < oldest || (since == oldest && held > most) {
				victim, most, oldest = h, held, since
			}
		}
		if victim == nil || victim == self {
			b.mu.Unlock()
			return ErrOverBudget
		}
		delete(b.holders, victim)
		b.mu.Unlock()
		victim.Evict(ErrOverBudget)
	}
}

// Release returns n bytes reserved earlier.
func (b *Budget) Release(n int64) {
	if n != 0 {
		b.used.Add(-n)
	}
}
