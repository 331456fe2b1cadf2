package agentproto

import (
	"bytes"
	"encoding/json"
	"sync"
)

// subscriber is an in-process subscription to a [Server]'s events (the HTTP
// API's event streams). When its buffer is full it is closed with
// overflowed set: a stream with a silent gap would mislead its reader, who
// can reconnect and start from a fresh snapshot instead.
type subscriber struct {
	srv        *Server
	ch         chan json.RawMessage
	once       sync.Once
	overflowed bool // set before ch is closed
}

// subscribe registers a subscriber with room for buffer events, or
// returns nil when the server is closing.
func (s *Server) subscribe(buffer int) *subscriber {
	sub := &subscriber{srv: s, ch: make(chan json.RawMessage, buffer)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil
	}
	s.subs[sub] = struct{}{}
	return sub
}

// deliver is called with the server's lock held. The event is copied: the
// caller's buffer is reused once every client has it.
func (sub *subscriber) deliver(event json.RawMessage) {
	select {
	case sub.ch <- bytes.Clone(event):
	default:
		sub.overflowed = true
		delete(sub.srv.subs, sub)
		sub.once.Do(func() { close(sub.ch) })
	}
}

func (sub *subscriber) close() {
	sub.srv.mu.Lock()
	delete(sub.srv.subs, sub)
	sub.srv.mu.Unlock()
	sub.once.Do(func() { close(sub.ch) })
}
