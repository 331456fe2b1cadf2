package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CancelTransport is an [mcp.Transport] that keeps MCP's rule for
// cancelled requests: once the client sends notifications/cancelled for a
// request still in flight, no response to it is written (the go-sdk cancels
// the handler's context, then writes whatever the handler returned). A
// cancellation of a request that was already answered, or never made,
// changes nothing.
//
// It holds one entry per request in flight. A CancelTransport is safe for
// concurrent use; so is each connection it makes, as the SDK needs.
type CancelTransport struct {
	// Transport is the transport wrapped, such as a [StdioTransport].
	Transport mcp.Transport
}

// Connect connects the wrapped transport.
func (t *CancelTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cancelConn{Connection: conn, cancelled: map[jsonrpc.ID]bool{}}, nil
}

// cancelConn drops the responses of cancelled requests.
type cancelConn struct {
	mcp.Connection
	mu sync.Mutex
	// cancelled holds the requests in flight: whether the client cancelled
	// each.
	cancelled map[jsonrpc.ID]bool
}

func (c *cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.mu.Lock()
		if req.IsCall() {
			c.cancelled[req.ID] = false
		} else if id, ok := cancelledID(req); ok {
			if _, inFlight := c.cancelled[id]; inFlight {
				c.cancelled[id] = true
			}
		}
		c.mu.Unlock()
	}
	return msg, err
}

// cancelledID returns the request a notifications/cancelled names.
func cancelledID(req *jsonrpc.Request) (jsonrpc.ID, bool) {
	if req.IsCall() || req.Method != "notifications/cancelled" {
		return jsonrpc.ID{}, false
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(requestID(p.RequestID))
	return id, err == nil && id.IsValid()
}

// requestID is a JSON id as jsonrpc.MakeID takes it: a string or a
// float64, which it turns into the int64 the SDK decodes request ids to.
func requestID(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func (c *cancelConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if res, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cancelled := c.cancelled[res.ID]
		delete(c.cancelled, res.ID)
		c.mu.Unlock()
		if cancelled {
			return nil // MCP: no response to a cancelled request
		}
	}
	return c.Connection.Write(ctx, msg)
}

// httpCancels keeps MCP's rule for cancelled requests on [NewHTTPHandler]'s
// stateful handler, where the go-sdk builds the connections itself (so no
// [CancelTransport] can wrap them) and writes the response of a cancelled
// request to the POST that carried it: once the session's client sends
// notifications/cancelled for a call whose POST is still open, the
// response's event on that POST is dropped. The SDK still counts the call
// answered, so the POST's stream ends, without it. A cancellation of a
// request that was already answered, of another session's, or of one never
// made changes nothing.
//
// It holds one entry per call in flight on an open POST, removed when the
// POST ends. Sessionless requests (protocol 2026-07-28) need none: there a
// client cancels by closing its request, which leaves the server nowhere to
// write the response.
type httpCancels struct {
	mu sync.Mutex
	// calls holds the calls in flight: whether the client cancelled each.
	calls map[sessionCall]bool
}

// sessionCall is a call of a session: its Mcp-Session-Id and request id.
type sessionCall struct {
	session string
	id      jsonrpc.ID
}

// track notes the calls and cancellations in body, a POST of the session
// r names, and returns the writer for its response, which drops the
// responses to its calls the client cancels, and the func to call when the
// POST has been served.
func (h *httpCancels) track(w http.ResponseWriter, r *http.Request, body []byte) (http.ResponseWriter, func()) {
	session := r.Header.Get("Mcp-Session-Id")
	body = bytes.TrimSpace(body)
	if session == "" || len(body) == 0 {
		return w, func() {}
	}
	var raws []json.RawMessage
	if body[0] == '[' {
		if json.Unmarshal(body, &raws) != nil {
			return w, func() {}
		}
	} else {
		raws = []json.RawMessage{body}
	}
	cw := &cancelWriter{ResponseWriter: w, cancels: h, session: session}
	h.mu.Lock()
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok {
			continue
		}
		key := sessionCall{session, req.ID}
		if req.IsCall() {
			// A second call with an id in flight is the SDK's to refuse;
			// the entry stays the first call's.
			if _, inFlight := h.calls[key]; !inFlight {
				h.calls[key] = false
				cw.calls = append(cw.calls, key)
			}
		} else if id, ok := cancelledID(req); ok {
			key.id = id
			if _, inFlight := h.calls[key]; inFlight {
				h.calls[key] = true
			}
		}
	}
	h.mu.Unlock()
	if len(cw.calls) == 0 {
		return w, func() {}
	}
	return cw, func() {
		h.mu.Lock()
		for _, key := range cw.calls {
			delete(h.calls, key)
		}
		h.mu.Unlock()
	}
}

// cancelWriter is the response writer of a POST that carried calls: it
// drops the server-sent event (or JSON body) that is the response to one
// of them the client cancelled. The go-sdk writes each event, and a JSON
// body, with one Write.
type cancelWriter struct {
	http.ResponseWriter
	cancels *httpCancels
	session string
	calls   []sessionCall // the POST's calls, in cancels.calls
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	if c.cancelled() {
		if res, ok := responseIn(p); ok && c.isCancelled(res.ID) {
			return len(p), nil // MCP: no response to a cancelled request
		}
	}
	return c.ResponseWriter.Write(p)
}

// cancelled reports whether the client cancelled any of the POST's calls
// (the common case, none, costs no parsing).
func (c *cancelWriter) cancelled() bool {
	c.cancels.mu.Lock()
	defer c.cancels.mu.Unlock()
	for _, key := range c.calls {
		if c.cancels.calls[key] {
			return true
		}
	}
	return false
}

func (c *cancelWriter) isCancelled(id jsonrpc.ID) bool {
	c.cancels.mu.Lock()
	defer c.cancels.mu.Unlock()
	return c.cancels.calls[sessionCall{c.session, id}]
}

// Flush and Unwrap let http.ResponseController reach the connection.
func (c *cancelWriter) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

func (c *cancelWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// responseIn returns the JSON-RPC response p carries: p is one server-sent
// event (its data line) or a JSON body.
func responseIn(p []byte) (*jsonrpc.Response, bool) {
	data := bytes.TrimSpace(p)
	for line := range bytes.Lines(p) {
		if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = bytes.TrimSpace(rest)
			break
		}
	}
	msg, err := decodeMessage(data)
	res, ok := msg.(*jsonrpc.Response)
	return res, err == nil && ok
}
