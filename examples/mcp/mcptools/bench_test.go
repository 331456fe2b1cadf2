package mcptools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkInMemoryToolCall is the go-sdk's own cost for one tools/call,
// client and server in one process over its in-memory transports, with the
// bridge's browser_snapshot answered at once by a Caller: what MCP costs
// before any process, pipe or socket (compare BenchmarkBridgeCall in
// cmd/agentbridge-mcp).
func BenchmarkInMemoryToolCall(b *testing.B) {
	snapshot := []byte(`{"kind":"snapshot","snapshot":{"url":"https://example.com/","title":"Example","nodes":[{"ref":"@e1","role":"link","name":"More information"}]}}`)
	caller := callerFunc(func(_ context.Context, _ string, _ any, result any) error {
		*result.(*json.RawMessage) = append((*result.(*json.RawMessage))[:0], snapshot...)
		return nil
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(b.Context(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: agentproto.ToolSnapshot, Arguments: map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
