package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/stretchr/testify/require"
)

// envReferenceServer names the reference mcp-server.js (KazKozDev/WebOperator,
// weboperator-bridge/mcp-server.js, with its package.json beside it) for
// BenchmarkReference; without it, or without node, that side is skipped.
const envReferenceServer = "WEBOPERATOR_MCP_SERVER_JS"

// BenchmarkReference measures browser_snapshot side by side in one run:
// agentproto.Client directly (the floor), agentbridge-mcp, and the reference
// mcp-server.js, every MCP server a process driven over stdio by the same
// minimal line client, on the same bridge (a real agent socket served by
// agentprototest's host with its stand-in extension). Each side reports the
// median at one call in flight (serial: p50-µs), calls/s at eight in flight
// (parallel-8), and for the MCP servers the server process's CPU time per
// call (user and system, from /proc) and its resident memory at the end
// (rss-MiB).
//
//	WEBOPERATOR_MCP_SERVER_JS=/path/to/weboperator-bridge/mcp-server.js \
//	  go test -run XXX -bench BenchmarkReference -benchtime 2s -count 4 ./cmd/agentbridge-mcp
func BenchmarkReference(b *testing.B) {
	bin, err := plainBinary()
	require.NoError(b, err)
	path := benchBridge(b)

	type caller struct {
		call func(ctx context.Context) error
		pid  int // the server process, 0 for none
	}
	sides := []struct {
		name string
		make func(b *testing.B) caller
	}{
		{"direct", func(b *testing.B) caller {
			c, err := agentproto.Dial(b.Context(), path, &agentproto.ClientOptions{Token: bridgeToken})
			require.NoError(b, err)
			b.Cleanup(func() { c.Close() })
			return caller{call: func(ctx context.Context) error {
				var raw json.RawMessage
				return c.Call(ctx, agentproto.TypeSnapshot, json.RawMessage(`{}`), &raw)
			}}
		}},
		{"agentbridge-mcp", func(b *testing.B) caller {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), bridgeEnv(path, bridgeToken)...)
			call := lineCallerCmd(b, cmd, tools.BrowserSnapshot)
			return caller{call: call, pid: cmd.Process.Pid}
		}},
		{"mcp-server.js", func(b *testing.B) caller {
			script := os.Getenv(envReferenceServer)
			if script == "" {
				b.Skip("set " + envReferenceServer + " to the reference mcp-server.js to measure it")
			}
			node, err := exec.LookPath("node")
			if err != nil {
				b.Skip("no node:", err)
			}
			cmd := exec.Command(node, script)
			cmd.Env = append(os.Environ(), bridgeEnv(path, bridgeToken)...)
			call := lineCallerCmd(b, cmd, tools.BrowserSnapshot)
			return caller{call: call, pid: cmd.Process.Pid}
		}},
	}
	for _, side := range sides {
		b.Run(side.name+"/serial", func(b *testing.B) {
			c := side.make(b)
			ctx := b.Context()
			var lat latencies
			cpu := startCPU(c.pid)
			for b.Loop() {
				start := time.Now()
				if err := c.call(ctx); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(start))
			}
			lat.report(b)
			cpu.report(b)
		})
		b.Run(side.name+"/parallel-8", func(b *testing.B) {
			c := side.make(b)
			ctx := b.Context()
			cpu := startCPU(c.pid)
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			cpu.report(b)
		})
	}
}

// cpuMeter reads a process's CPU time and memory from /proc (Linux).
type cpuMeter struct {
	pid   int
	start time.Duration
}

func startCPU(pid int) *cpuMeter { return &cpuMeter{pid: pid, start: processCPU(pid)} }

// report adds server-cpu-µs/call and rss-MiB for a server process.
func (m *cpuMeter) report(b *testing.B) {
	if m.pid == 0 || runtime.GOOS != "linux" {
		return
	}
	used := processCPU(m.pid) - m.start
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "server-cpu-µs/call")
	status, err := os.ReadFile("/proc/" + strconv.Itoa(m.pid) + "/status")
	if err != nil {
		return
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			b.ReportMetric(float64(kb)/1024, "rss-MiB")
		}
	}
}

// processCPU is the user and system time of a process and all its threads
// (/proc/PID/stat, in clock ticks of 10 ms: Linux's USER_HZ is 100).
func processCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // f[0] is field 3: utime is field 14, stime 15
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
