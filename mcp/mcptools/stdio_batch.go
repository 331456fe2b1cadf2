package mcptools

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstProtocolWithoutBatches is the protocol version that removed JSON-RPC
// batches (2025-03-26 added them; dates compare as strings).
const firstProtocolWithoutBatches = "2025-06-18"

// batchInvalid and batchDuplicate are the responses in a batch's array to
// an element that is not a JSON-RPC message, and to a request whose id is
// already waiting in a batch.
const (
	batchInvalid   = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
	batchDuplicate = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: duplicate id in a batch"}}`
)

// batcher keeps a [StdioTransport] session's JSON-RPC batches: which
// protocol the session negotiated (batches end at 2025-06-18), and, for each
// batch whose requests are not all answered, the responses so far. The line
// reader adds to it and the connection's Write completes it, each under mu.
// A nil batcher refuses batches.
type batcher struct {
	maxLen int

	mu      sync.Mutex
	initID  jsonrpc.ID // the initialize request's id, while its answer is due
	version string     // the negotiated protocol, once initialize is answered
	pending map[jsonrpc.ID]*pendingBatch
}

// pendingBatch is a batch waiting for responses: its array's entries, in
// the order of its elements (nil while a request's response is due).
type pendingBatch struct {
	entries [][]byte
	slot    map[jsonrpc.ID]int // the entry of each request still due
}

// accepted reports whether a batch is read as one (else it is refused).
func (b *batcher) accepted() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version == "" || b.version < firstProtocolWithoutBatches
}

// saw notes what a message read changes: the initialize request whose
// answer names the protocol, or a cancellation that drops a batch's request
// (the client ignores a response to it: MCP's cancellation rule). It returns
// a batch array to write if that request was the last one due.
func (b *batcher) saw(msg jsonrpc.Message) []byte {
	req, ok := msg.(*jsonrpc.Request)
	if b == nil || !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case req.Method == "initialize" && req.IsCall():
		b.initID = req.ID
	case req.Method == "server/discover" && req.IsCall():
		// Protocol 2026-07-28 has no initialize: the version is in each
		// request's _meta, starting with the discovery (an initialize
		// after a failed one names the version again).
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if v, ok := p.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
				b.version = v
			}
		}
	case req.Method == "notifications/cancelled" && !req.IsCall():
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return nil
		}
		id, err := jsonrpc.MakeID(p.RequestID)
		if err != nil {
			return nil
		}
		return b.resolveLocked(id, nil)
	}
	return nil
}

// add reads a batch line (valid JSON, an array): the messages to hand to
// the server, and what to write at once (an error, or the array when the
// batch has no request to wait for).
func (b *batcher) add(line []byte) (msgs []jsonrpc.Message, write []byte) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, []byte(invalidRequestLine)
	}
	switch {
	case len(raws) == 0:
		return nil, []byte(emptyBatchLine)
	case len(raws) > b.maxLen:
		return nil, []byte(longBatchLine)
	}
	batch := &pendingBatch{slot: make(map[jsonrpc.ID]int)}
	var early []byte // a batch array completed by a cancellation within
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		if err != nil {
			batch.entries = append(batch.entries, []byte(batchInvalid))
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			b.mu.Lock()
			_, waiting := b.pending[req.ID]
			_, dup := batch.slot[req.ID]
			b.mu.Unlock()
			if waiting || dup {
				batch.entries = append(batch.entries, []byte(batchDuplicate))
				continue
			}
			batch.slot[req.ID] = len(batch.entries)
			batch.entries = append(batch.entries, nil)
		}
		if w := b.saw(msg); w != nil {
			early = append(early, w...)
		}
		msgs = append(msgs, msg)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(batch.slot) == 0 {
		if len(batch.entries) > 0 {
			early = append(early, encodeBatch(batch.entries)...)
		}
		return msgs, early
	}
	if b.pending == nil {
		b.pending = make(map[jsonrpc.ID]*pendingBatch)
	}
	for id := range batch.slot {
		b.pending[id] = batch
	}
	return msgs, early
}

// respond takes a response the server writes. inBatch reports whether it
// answers a batch's request; then line is the batch's array to write once
// it was the last one due, else nil.
func (b *batcher) respond(resp *jsonrpc.Response) (line []byte, inBatch bool) {
	if b == nil {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.initID.IsValid() && resp.ID == b.initID {
		b.initID = jsonrpc.ID{}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &res) == nil {
			b.version = res.ProtocolVersion
		}
	}
	if _, ok := b.pending[resp.ID]; !ok {
		return nil, false
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error: a response could not be encoded"}}`)
	}
	return b.resolveLocked(resp.ID, data), true
}

// resolveLocked fills the entry of request id (nil data drops it) and
// returns the batch's array when no request of it is due any more.
func (b *batcher) resolveLocked(id jsonrpc.ID, data []byte) []byte {
	batch, ok := b.pending[id]
	if !ok {
		return nil
	}
	delete(b.pending, id)
	batch.entries[batch.slot[id]] = data
	delete(batch.slot, id)
	if len(batch.slot) > 0 {
		return nil
	}
	var entries [][]byte
	for _, e := range batch.entries {
		if e != nil {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return encodeBatch(entries)
}

// encodeBatch is the line of a batch's responses.
func encodeBatch(entries [][]byte) []byte {
	line := append([]byte{'['}, bytes.Join(entries, []byte{','})...)
	return append(line, ']', '\n')
}
