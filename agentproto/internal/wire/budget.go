package wire

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrOverBudget is returned by Budget.Reserve, and by Push of a queue the
// budget evicted, when the bytes held by all the budget's holders together
// would exceed its limit and the holder asking holds the most.
var ErrOverBudget = errors.New("write budget of the whole server exhausted")

// Holder holds bytes against a [Budget]: a [Queue], or another buffer of
// outgoing data.
type Holder interface {
	// Held returns the bytes the holder holds. It must not block.
	Held() int64
	// Evict drops everything the holder holds, releasing it from the
	// budget before it returns, and ends the holder with err. It must not
	// take the budget's lock (it is not held), nor block.
	Evict(err error)
}

// Budget bounds the bytes that several holders (the write queues of all
// of a server's clients, its event streams) hold together. When a
// reservation does not fit, the holder that holds the most bytes (the
// slowest reader) is evicted, until it fits. Its methods are safe for
// concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64

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

// Reserve takes n bytes for self. When they do not fit, it evicts the
// holder with the most bytes and tries again; when that holder is self, or
// nothing can be evicted, it returns ErrOverBudget and takes nothing. A
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
		var victim Holder
		var most int64
		for h := range b.holders {
			if held := h.Held(); victim == nil || held > most {
				victim, most = h, held
			}
		}
		if victim == nil || victim == self || most == 0 {
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
