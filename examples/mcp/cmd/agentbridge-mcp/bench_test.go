package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
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
	br := agentprototest.NewBridge(&agentprototest.BridgeOptions{
		Server: agentproto.ServerOptions{Token: bridgeToken},
		Extension: agentprototest.Options{Serial: true, Handler: agentprototest.HandlerFunc(
			func(context.Context, *agentprototest.Request) (any, error) { return snapshot, nil })},
	})
	ln, err := agentproto.ListenUnix(b.Context(), path)
	require.NoError(b, err)
	served := make(chan struct{})
	go func() {
		defer close(served)
		br.Server.Serve(ln)
	}()
	b.Cleanup(func() {
		br.Close()
		<-served
	})
	require.NoError(b, br.WaitOnline(b.Context()))
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
		{"mcp-stdio", overMCP(agentproto.ToolSnapshot, false)},
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
