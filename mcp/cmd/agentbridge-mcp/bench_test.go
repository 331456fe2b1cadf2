package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// plainBinary is agentbridge-mcp built without the race detector, for
// benchmarks (the tests' binary is a -race build).
var plainBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agentbridge-mcp-bench")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "agentbridge-mcp")
	build := exec.Command("go", "build", "-o", path, ".")
	build.Stderr = os.Stderr
	return path, build.Run()
})

// benchBridge is a bridge on a real Unix socket whose stand-in extension
// answers browser.snapshot at once with a small snapshot, in its reading
// goroutine (agentprototest's lowest-overhead mode).
func benchBridge(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "bridge.sock")
	snapshot := json.RawMessage(`{"kind":"snapshot","snapshot":{"url":"https://example.com/","title":"Example","nodes":[{"ref":"@e1","role":"link","name":"More information"}]}}`)
	serveBridge(b, path, &agentprototest.BridgeOptions{
		Extension: agentprototest.Options{Serial: true, Handler: agentprototest.HandlerFunc(
			func(context.Context, *agentprototest.Request) (any, error) { return snapshot, nil })},
	})
	return path
}

// latencies records per-call durations and reports their median.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	b.ReportMetric(float64(l.d[len(l.d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkBridgeCall measures one browser_snapshot through MCP over stdio
// (go-sdk client → agentbridge-mcp process → agent socket → host → stand-in
// extension) against the same command made directly with agentproto.Client
// on the same bridge (the floor). "parallel" runs 8 concurrent callers; its
// ns/op is the inverse of throughput.
func BenchmarkBridgeCall(b *testing.B) {
	bin, err := plainBinary()
	require.NoError(b, err)
	path := benchBridge(b)

	direct := func(b *testing.B) func(ctx context.Context) error {
		c, err := agentproto.Dial(b.Context(), path, &agentproto.ClientOptions{Token: bridgeToken})
		require.NoError(b, err)
		b.Cleanup(func() { c.Close() })
		return func(ctx context.Context) error {
			var raw json.RawMessage
			return c.Call(ctx, agentproto.TypeSnapshot, json.RawMessage(`{}`), &raw)
		}
	}
	overMCP := func(tool string, wantError bool, args ...string) func(b *testing.B) func(ctx context.Context) error {
		return func(b *testing.B) func(ctx context.Context) error {
			return mcpCaller(b, bin, path, tool, wantError, args...)
		}
	}
	for _, side := range []struct {
		name string
		make func(b *testing.B) func(ctx context.Context) error
	}{
		{"direct", direct},
		// The floor of the stdio hop: lineclient's requests echoed by cat.
		{"pipe-echo", func(b *testing.B) func(ctx context.Context) error { return pipeEcho(b) }},
		{"mcp-stdio", overMCP(tools.BrowserSnapshot, false)},
		// The same server driven by a minimal line client (protocol
		// 2025-11-25, no SDK on the client side): the server's share.
		{"mcp-stdio-lineclient", func(b *testing.B) func(ctx context.Context) error {
			return lineCaller(b, bin, path, tools.BrowserSnapshot)
		}},
		// The SDK's own floor: a tool that answers at once without I/O
		// (hub_tabs while no extension is connected).
		{"mcp-stdio-noop", overMCP("hub_tabs", true, "--hub", "127.0.0.1:0")},
	} {
		b.Run(side.name+"/serial", func(b *testing.B) {
			call := side.make(b)
			var lat latencies
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if err := call(ctx); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(start))
			}
			lat.report(b)
		})
		b.Run(side.name+"/parallel-8", func(b *testing.B) {
			call := side.make(b)
			ctx := b.Context()
			b.ReportAllocs()
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// mcpCaller starts agentbridge-mcp with args and returns a function calling
// tool through it over stdio.
func mcpCaller(b *testing.B, bin, socket, tool string, wantError bool, args ...string) func(ctx context.Context) error {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), append(bridgeEnv(socket, bridgeToken), envHubToken+"="+hubToken)...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { cs.Close() })
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError != wantError {
			b.Errorf("%s: isError %v: %v", tool, res.IsError, res.Content)
		}
		return err
	}
}

// lineCaller starts agentbridge-mcp and returns a function calling tool
// through it with a minimal MCP client of its own (lineClient). Its cost is a
// small fraction of the go-sdk client's, so what the benchmark measures is
// the server (and the bridge behind it).
func lineCaller(b *testing.B, bin, socket, tool string) func(ctx context.Context) error {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), bridgeEnv(socket, bridgeToken)...)
	return lineCallerCmd(b, cmd, tool)
}

// lineCallerCmd is lineCaller for any MCP server command: cmd is started.
func lineCallerCmd(b *testing.B, cmd *exec.Cmd, tool string) func(ctx context.Context) error {
	call, notify := lineClient(b, cmd)
	_, err := call(b.Context(), "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	require.NoError(b, err)
	require.NoError(b, notify(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	params := `{"name":"` + tool + `","arguments":{}}`
	return func(ctx context.Context) error {
		resp, err := call(ctx, "tools/call", params)
		if err != nil {
			return err
		}
		var r struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(resp, &r); err != nil || r.Result == nil || r.Result.IsError {
			return fmt.Errorf("%s: %s", tool, resp)
		}
		return nil
	}
}

// pipeEcho is the floor of a stdio hop: the same request lines, through the
// same client, echoed by cat instead of answered by a server.
func pipeEcho(b *testing.B) func(ctx context.Context) error {
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("no cat:", err)
	}
	call, _ := lineClient(b, exec.Command(cat))
	params := `{"name":"` + tools.BrowserSnapshot + `","arguments":{}}`
	return func(ctx context.Context) error {
		_, err := call(ctx, "tools/call", params)
		return err
	}
}

// lineClient starts cmd and returns a JSON-RPC client over its stdin and
// stdout, one message per line: call writes a request and waits for the line
// with its id (a reader goroutine matches lines to callers), notify writes a
// line as is.
func lineClient(b *testing.B, cmd *exec.Cmd) (call func(ctx context.Context, method, params string) ([]byte, error), notify func(line string) error) {
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	var (
		mu      sync.Mutex // guards next, waiting and writes to stdin
		next    int
		waiting = map[int]chan []byte{}
	)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var resp struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID == nil {
				continue // a notification
			}
			mu.Lock()
			ch := waiting[*resp.ID]
			delete(waiting, *resp.ID)
			mu.Unlock()
			if ch != nil {
				ch <- slices.Clone(sc.Bytes())
			}
		}
	}()
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	call = func(ctx context.Context, method, params string) ([]byte, error) {
		ch := make(chan []byte, 1)
		mu.Lock()
		next++
		id := next
		waiting[id] = ch
		line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + "}\n"
		_, err := io.WriteString(stdin, line)
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case resp := <-ch:
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	notify = func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := io.WriteString(stdin, line+"\n")
		return err
	}
	return call, notify
}
