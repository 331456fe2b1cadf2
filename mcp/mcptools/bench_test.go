package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
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
	benchInMemory(b, server, tools.BrowserSnapshot)
}

// benchInMemory connects the go-sdk's client to server over the SDK's
// in-memory transports and measures calls of tool.
func benchInMemory(b *testing.B, server *mcp.Server, tool string) {
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
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := cs.CallTool(b.Context(), params); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkStdioToolCall is the server's side alone: AddBridgeTools' tools
// on a StdioTransport over pipes, driven by a minimal line client (protocol
// 2025-11-25) in the same process, with browser_snapshot answered at once.
func BenchmarkStdioToolCall(b *testing.B) {
	snapshot := []byte(`{"kind":"snapshot","snapshot":{"url":"https://example.com/","title":"Example","nodes":[{"ref":"@e1","role":"link","name":"More information"}]}}`)
	caller := callerFunc(func(_ context.Context, _ string, _ any, result any) error {
		*result.(*json.RawMessage) = append((*result.(*json.RawMessage))[:0], snapshot...)
		return nil
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	AddBridgeTools(server, caller)
	benchLineClient(b, server, func(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
		return &StdioTransport{In: in, Out: out}
	}, tools.BrowserSnapshot)
}

// benchLineClient runs server over pipes with the transport made by
// transport, initializes it as a minimal line client would (one write, one
// read per call, no MCP client library), and measures calls of tool.
func benchLineClient(b *testing.B, server *mcp.Server, transport func(io.ReadCloser, io.WriteCloser) mcp.Transport, tool string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- server.Run(b.Context(), transport(inR, outW)) }()
	defer func() {
		inW.Close()
		<-done
		outR.Close()
	}()
	lines := bufio.NewReader(outR)
	roundTrip := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := lines.ReadSlice('\n')
		if err != nil || !bytes.Contains(resp, []byte(`"result"`)) || bytes.Contains(resp, []byte(`"isError":true`)) {
			b.Fatal(err, string(resp))
		}
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(call)
	}
}

// BenchmarkInMemoryNoopTool is the go-sdk's floor, with nothing of ours:
// its own client and server in one process over its in-memory transports,
// one tool registered with Server.AddTool whose handler returns an empty
// text at once (no argument validation, no caller).
func BenchmarkInMemoryNoopTool(b *testing.B) {
	server := noopServer()
	benchInMemory(b, server, "noop")
}

// BenchmarkStdioNoopTool is the go-sdk server's own floor over stdio, with
// nothing of ours: the SDK's IOTransport over pipes, one tool registered
// with Server.AddTool whose handler returns an empty text at once, and a
// minimal line client (one write, one read per call) in place of an MCP
// client. Whatever this costs per call, the bridge tools' overhead cannot
// be below it.
func BenchmarkStdioNoopTool(b *testing.B) {
	server := noopServer()
	benchLineClient(b, server, func(in io.ReadCloser, out io.WriteCloser) mcp.Transport {
		return &mcp.IOTransport{Reader: in, Writer: out}
	}, "noop")
}

// noopServer is an SDK server with nothing of ours: one tool, registered
// with Server.AddTool, whose handler returns an empty text at once.
func noopServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{}}}, nil
		})
	return server
}
