package bridge

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// subscriber is an in-process subscription to a [Server]'s events for one
// task (the HTTP API's event streams). Its events count, in bytes, against
// the server's MaxQueuedBytes for one client and MaxTotalQueuedBytes for
// all, as a socket client's do. When it overflows (or is the slowest
// holder when the total is reached) it ends with overflowed set: a stream with a
// silent gap would mislead its reader, who can reconnect and start from a
// fresh snapshot instead.
type subscriber struct {
	srv       *Server
	taskID    string
	maxEvents int

	mu         sync.Mutex
	events     []json.RawMessage
	held       int64 // bytes of events
	heldA      atomic.Int64
	sinceA     atomic.Uint64 // Since: the budget's tick of the last progress
	ended      bool
	endedA     atomic.Bool   // mirrors ended, for deliver without the lock
	overflowed bool          // set before done is closed
	ready      chan struct{} // capacity 1: events are waiting
	done       chan struct{} // closed when the subscription ends
}

// subscribe registers a subscriber to taskID's events with room for
// maxEvents of them, or returns nil when the server is closing.
func (s *Server) subscribe(taskID string, maxEvents int) *subscriber {
	sub := &subscriber{srv: s, taskID: taskID, maxEvents: maxEvents, ready: make(chan struct{}, 1), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil
	}
	s.subs[sub] = struct{}{}
	s.budget.Add(sub)
	return sub
}

// deliver is called with the server's lock held, with the event's task id.
// The event is copied: the caller's buffer is reused once every client has
// it.
func (sub *subscriber) deliver(event json.RawMessage, taskID string) {
	if taskID != sub.taskID {
		return
	}
	n := int64(len(event))
	if sub.endedA.Load() {
		return // it asks the budget for nothing: it could evict another stream
	}
	if err := sub.srv.budget.Reserve(sub, n); err != nil {
		sub.overBudget()
		return
	}
	sub.mu.Lock()
	if sub.ended || len(sub.events) >= sub.maxEvents || (sub.held > 0 && sub.held+n > int64(sub.srv.maxQueued)) {
		full := !sub.ended
		sub.mu.Unlock()
		sub.srv.budget.Release(n)
		if full {
			sub.srv.log.Warn("bridge: ending an event stream that does not read its events", "events", sub.maxEvents, "bytes", sub.srv.maxQueued)
			sub.end(true)
		}
		return
	}
	sub.events = append(sub.events, bytes.Clone(event))
	if sub.held == 0 {
		sub.sinceA.Store(sub.srv.budget.Tick()) // it starts holding bytes
	}
	sub.held += n
	sub.heldA.Store(sub.held)
	sub.mu.Unlock()
	select {
	case sub.ready <- struct{}{}:
	default:
	}
}

// take returns the events waiting. The caller releases their bytes with
// written once they are written.
func (sub *subscriber) take() []json.RawMessage {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	events := sub.events
	sub.events = nil
	return events
}

// written releases the bytes of an event taken and written (or dropped).
func (sub *subscriber) written(event json.RawMessage) {
	n := int64(len(event))
	sub.mu.Lock()
	n = min(n, sub.held)
	sub.held -= n
	sub.heldA.Store(sub.held)
	if sub.held == 0 {
		sub.sinceA.Store(0)
	} else {
		sub.sinceA.Store(sub.srv.budget.Tick()) // an event was written: progress
	}
	sub.mu.Unlock()
	sub.srv.budget.Release(n)
}

// Held returns the bytes of events waiting or being written.
func (sub *subscriber) Held() int64 { return sub.heldA.Load() }

// Since returns the budget's tick at which the stream last wrote an event
// or started holding any; 0 while it holds none.
func (sub *subscriber) Since() uint64 { return sub.sinceA.Load() }

// Evict ends the subscription for the budget, which holds the server's
// lock or a queue's: it takes neither.
func (sub *subscriber) Evict(error) { sub.overBudget() }

// overBudget ends the subscription because the server's total is reached
// and it is the slowest holder; the log says so once, whichever of Evict
// and its own refused reservation comes first.
func (sub *subscriber) overBudget() {
	if held, ended := sub.end(true); ended {
		sub.srv.logOverBudget(held)
	}
}

// end drops the events waiting, releases their bytes and closes done. It
// returns the bytes it held and whether this call ended it.
func (sub *subscriber) end(overflowed bool) (held int64, ended bool) {
	sub.mu.Lock()
	if sub.ended {
		sub.mu.Unlock()
		return 0, false
	}
	sub.ended = true
	sub.endedA.Store(true)
	sub.overflowed = overflowed
	held = sub.held
	sub.events, sub.held = nil, 0
	sub.heldA.Store(0)
	sub.sinceA.Store(0)
	sub.mu.Unlock()
	sub.srv.budget.Release(held)
	close(sub.done)
	return held, true
}

func (sub *subscriber) close() {
	sub.srv.mu.Lock()
	delete(sub.srv.subs, sub)
	sub.srv.mu.Unlock()
	sub.srv.budget.Remove(sub)
	sub.end(false)
}

var _ wire.Holder = (*subscriber)(nil)
