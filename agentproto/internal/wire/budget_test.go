package wire

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

type fakeHolder struct {
	b       *Budget
	held    atomic.Int64
	evicted bool
}

func (h *fakeHolder) Held() int64 { return h.held.Load() }
func (h *fakeHolder) Evict(error) {
	h.evicted = true
	h.b.Release(h.held.Swap(0))
}

func (h *fakeHolder) take(n int64) error {
	if err := h.b.Reserve(h, n); err != nil {
		return err
	}
	h.held.Add(n)
	return nil
}

// The holder with the most bytes goes first, until the reservation fits;
// the one asking fails when it holds the most itself.
func TestBudgetEvictsTheLargestHolder(t *testing.T) {
	b := NewBudget(100)
	small, large, asker := &fakeHolder{b: b}, &fakeHolder{b: b}, &fakeHolder{b: b}
	for _, h := range []*fakeHolder{small, large, asker} {
		b.Add(h)
	}
	assert.NoError(t, small.take(20))
	assert.NoError(t, large.take(60))
	assert.NoError(t, asker.take(10))
	assert.NoError(t, asker.take(30), "fits once the largest is evicted")
	assert.True(t, large.evicted)
	assert.False(t, small.evicted)
	assert.Equal(t, int64(60), b.Used())
	assert.ErrorIs(t, asker.take(50), ErrOverBudget, "the asker holds the most")
	assert.False(t, small.evicted)
	assert.Equal(t, int64(60), b.Used(), "a refused reservation takes nothing")
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
