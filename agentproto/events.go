package agentproto

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// EventKind is an event's "kind" member. The zero value is none: an
// event without a string kind.
type EventKind string

// Event kinds the extension emits. Events of other kinds are relayed all
// the same (see [Event.Decode]).
const (
	EventTaskUpdate     EventKind = "task:update"
	EventTaskStep       EventKind = "task:step"
	EventTaskError      EventKind = "task:error"
	EventSkillsDetected EventKind = "skills:detected"
)

// Event is one event from the extension, as every client receives it.
type Event struct {
	// Kind is the event's "kind" member, such as "task:update" ("" when
	// it has none).
	Kind EventKind
	// Raw is the whole event object, byte for byte.
	Raw json.RawMessage
}

// TaskUpdateEvent is a task:update event: the task's new state.
type TaskUpdateEvent struct {
	Kind EventKind `json:"kind"`
	Task Task      `json:"task"`
}

// TaskStepEvent is a task:step event: one step of a task started or
// ended. Large fields (snapshot, screenshot, prompt, thinking) are left
// out of live events; tasks.get has them.
type TaskStepEvent struct {
	Kind   EventKind `json:"kind"`
	TaskID string    `json:"taskId"`
	Step   Step      `json:"step"`
}

// TaskErrorEvent is a task:error event.
type TaskErrorEvent struct {
	Kind   EventKind `json:"kind"`
	TaskID string    `json:"taskId"`
	Error  string    `json:"error"`
}

// SkillsDetectedEvent is a skills:detected event.
type SkillsDetectedEvent struct {
	Kind   EventKind `json:"kind"`
	TaskID string    `json:"taskId"`
	Skills []Skill   `json:"skills"`
}

// Skill is one skill the extension detected for a task.
type Skill struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
	Auto   bool   `json:"auto"`
}

// Decode returns the event as *[TaskUpdateEvent], *[TaskStepEvent],
// *[TaskErrorEvent] or *[SkillsDetectedEvent] by its kind, or Raw for a kind
// this package does not know.
func (e Event) Decode() (any, error) {
	var v any
	switch e.Kind {
	case EventTaskUpdate:
		v = new(TaskUpdateEvent)
	case EventTaskStep:
		v = new(TaskStepEvent)
	case EventTaskError:
		v = new(TaskErrorEvent)
	case EventSkillsDetected:
		v = new(SkillsDetectedEvent)
	default:
		return e.Raw, nil
	}
	if err := json.Unmarshal(e.Raw, v); err != nil {
		return nil, fmt.Errorf("agentproto: decoding %s event: %w", e.Kind, err)
	}
	return v, nil
}

// TaskID returns the id of the task the event is about: task.id for
// task:update, taskId for the others ("" when absent).
func (e Event) TaskID() string {
	var v struct {
		TaskID string `json:"taskId"`
		Task   struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if json.Unmarshal(e.Raw, &v) != nil {
		return ""
	}
	if v.TaskID != "" {
		return v.TaskID
	}
	return v.Task.ID
}

// SubscribeOptions configures a [Subscription]. Nil means defaults.
type SubscribeOptions struct {
	// Buffer is the number of events held for a slow reader. Zero means
	// [DefaultEventBuffer].
	Buffer int
}

// Subscription receives the events a [Client]'s connection carries.
//
// Overflow policy: the connection never waits for a subscriber. When the
// buffer is full, the oldest buffered event is discarded to make room for
// the newest, and Dropped counts it; task:update events carry a task's
// whole state, so the newest are the ones worth keeping.
type Subscription struct {
	client  *Client
	ch      chan Event
	dropped atomic.Uint64
	once    sync.Once
}

// Subscribe starts a subscription to the connection's events. Events
// that arrived before it are not replayed (the protocol has no replay).
// opts may be nil.
func (c *Client) Subscribe(opts *SubscribeOptions) *Subscription {
	buffer := DefaultEventBuffer
	if opts != nil && opts.Buffer > 0 {
		buffer = opts.Buffer
	}
	s := &Subscription{client: c, ch: make(chan Event, buffer)}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		s.closeChannel()
		return s
	}
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	return s
}

// Events returns the channel of events. It is closed when the
// subscription or the client is closed, or the connection is lost.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Dropped reports how many events were discarded because the buffer was
// full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close ends the subscription and closes its channel. It is idempotent.
func (s *Subscription) Close() {
	s.client.mu.Lock()
	_, live := s.client.subs[s]
	delete(s.client.subs, s)
	s.client.mu.Unlock()
	if live {
		s.closeChannel()
	}
}

func (s *Subscription) closeChannel() { s.once.Do(func() { close(s.ch) }) }

// deliver hands e to the subscriber without blocking. It is called by the
// connection's reading goroutine only, with the client's lock held.
func (s *Subscription) deliver(e Event) {
	select {
	case s.ch <- e:
		return
	default:
	}
	select {
	case <-s.ch:
		s.dropped.Add(1)
	default:
	}
	select {
	case s.ch <- e:
	default:
		s.dropped.Add(1)
	}
}

func (c *Client) deliverEvent(raw []byte) {
	e := Event{Kind: EventKind(wire.EventKind(raw)), Raw: raw}
	c.mu.Lock()
	for s := range c.subs {
		s.deliver(e)
	}
	c.mu.Unlock()
}
