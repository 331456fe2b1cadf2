package wire

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

type fakeHolder struct {
	b       *Budget
	held    atomic.Int64
	since   atomic.Uint64
	evicted bool
}

func (h *fakeHolder) Held() int64   { return h.held.Load() }
func (h *fakeHolder) Since() uint64 { return h.since.Load() }
func (h *fakeHolder) Evict(error) {
	h.evicted = true
	h.since.Store(0)
	h.b.Release(h.held.Swap(0))
}

func (h *fakeHolder) take(n int64) error {
	if err := h.b.Reserve(h, n); err != nil {
		return err
	}
	if h.held.Add(n) == n {
		h.since.Store(h.b.Tick())
	}
	return nil
}

// wrote is the holder's reader taking n bytes: progress.
func (h *fakeHolder) wrote(n int64) {
	h.b.Release(n)
	if h.held.Add(-n) == 0 {
		h.since.Store(0)
	} else {
		h.since.Store(h.b.Tick())
	}
}

// The holder that has gone longest without progress goes first, until the
// reservation fits, even when another holds more for the moment; the one
// asking fails when it is the slowest itself.
func TestBudgetEvictsTheSlowestHolder(t *testing.T) {
	b := NewBudget(100)
	stalled, reading, asker := &fakeHolder{b: b}, &fakeHolder{b: b}, &fakeHolder{b: b}
	for _, h := range []*fakeHolder{stalled, reading, asker} {
		b.Add(h)
	}
	assert.NoError(t, stalled.take(20))
	assert.NoError(t, reading.take(60))
	assert.NoError(t, asker.take(10))
	reading.wrote(10) // the reader keeps up: it holds 50, more than the stalled one, but moves
	assert.NoError(t, asker.take(30), "fits once the slowest is evicted")
	assert.True(t, stalled.evicted, "the holder that made no progress goes first")
	assert.False(t, reading.evicted, "a reader that keeps up is kept, however much it holds for the moment")
	assert.Equal(t, int64(90), b.Used())
	assert.NoError(t, asker.take(10), "fits exactly")
	reading.wrote(10)
	assert.ErrorIs(t, asker.take(20), ErrOverBudget, "the asker is the slowest itself")
	assert.False(t, reading.evicted)
	assert.Equal(t, int64(90), b.Used(), "a refused reservation takes nothing")
}

// Among holders stalled since the same tick, the one holding the most goes
// first; a holder that holds nothing is never evicted.
func TestBudgetTieGoesToTheLargest(t *testing.T) {
	b := NewBudget(100)
	small, large, empty, asker := &fakeHolder{b: b}, &fakeHolder{b: b}, &fakeHolder{b: b}, &fakeHolder{b: b}
	for _, h := range []*fakeHolder{small, large, empty, asker} {
		b.Add(h)
	}
	assert.NoError(t, small.take(20))
	assert.NoError(t, large.take(60))
	small.since.Store(5)
	large.since.Store(5)
	assert.NoError(t, asker.take(40))
	assert.True(t, large.evicted)
	assert.False(t, small.evicted)
	assert.False(t, empty.evicted)
}

// One frame larger than the whole budget still goes when nothing else is
// held.
func TestBudgetLargeFrameAlone(t *testing.T) {
	b := NewBudget(10)
	h := &fakeHolder{b: b}
	b.Add(h)
	assert.NoError(t, h.take(50))
	b.Release(h.held.Swap(0))
	assert.Zero(t, b.Used())
}

// A queue counts its bytes until they are written, a write in progress
// included, and releases them all when closed.
func TestQueueHoldsAgainstItsBudget(t *testing.T) {
	b := NewBudget(1 << 20)
	w := held(1 << 20) // blocks in WriteFrames until released
	q := NewQueue(w, QueueOptions{Budget: b})
	wait := runQueue(q)
	assert.NoError(t, q.Push([]byte("abcd"), nil, nil, nil, nil))
	<-w.entered
	assert.Equal(t, int64(8), q.Held(), "the write in progress counts")
	assert.NoError(t, q.Push([]byte("ef"), nil, nil, nil, nil))
	assert.Equal(t, int64(14), b.Used())
	q.Close()
	assert.Zero(t, b.Used(), "closing releases everything")
	close(w.gate)
	assert.NoError(t, wait())
	assert.Zero(t, b.Used(), "closing releases everything")
	assert.Zero(t, q.Held())
}
