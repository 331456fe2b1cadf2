package mcptools

import (
	"context"
	"encoding/json"
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
		} else if req.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(requestID(p.RequestID)); err == nil {
					if _, inFlight := c.cancelled[id]; inFlight {
						c.cancelled[id] = true
					}
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, err
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
