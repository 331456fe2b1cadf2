package bridge_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/internal/testbridge"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Every benchmark here runs agents, bridge and stand-in extension in this
// one process, on the same cores: besides time per operation each reports
// req/s (the wall-clock rate), cpu-µs/op (the whole process's user and
// system CPU time per request, which other load on the machine disturbs
// less than wall-clock figures) and the p50 and p99 latency of a request.

// payloadOf returns a JSON object of about n bytes.
func payloadOf(n int) json.RawMessage {
	pad := max(n-len(`{"ref":"@e1","text":""}`), 0)
	return json.RawMessage(`{"ref":"@e1","text":"` + string(bytes.Repeat([]byte("x"), pad)) + `"}`)
}

var benchPayloads = []struct {
	name string
	size int
}{{"200B", 200}, {"64KiB", 64 << 10}}

// runStats measures a benchmark's requests: latencies (each goroutine
// records its own, merged at the end), wall-clock rate and process CPU.
type runStats struct {
	mu    sync.Mutex
	lat   []time.Duration
	start time.Time
	cpu   time.Duration
	vcsw  int64
}

func (s *runStats) begin() {
	s.start, s.cpu, s.vcsw = time.Now(), processCPU(), processSwitches()
}

func (s *runStats) merge(lat []time.Duration) {
	s.mu.Lock()
	s.lat = append(s.lat, lat...)
	s.mu.Unlock()
}

func (s *runStats) report(b *testing.B) {
	cpu, wall := processCPU()-s.cpu, time.Since(s.start)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(processSwitches()-s.vcsw)/float64(b.N), "vcsw/op")
	if len(s.lat) > 0 {
		slices.Sort(s.lat)
		b.ReportMetric(float64(s.lat[len(s.lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(s.lat[len(s.lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	}
}

// BenchmarkRoundTrip measures agent → socket → host → extension → back,
// with one agent and with 8 agents calling at once.
func BenchmarkRoundTrip(b *testing.B) {
	for _, p := range benchPayloads {
		payload := payloadOf(p.size)
		b.Run("agents=1/payload="+p.name, func(b *testing.B) { benchAgents(b, 1, payload) })
		b.Run("agents=8/payload="+p.name, func(b *testing.B) { benchAgents(b, 8, payload) })
	}
}

// benchAgents runs the benchmark's requests from the given number of
// agents, each with its own connection and one request in flight.
func benchAgents(b *testing.B, agents int, payload json.RawMessage) {
	bb := testbridge.StartBench(b, agentprototest.Echo)
	defer bb.Stop()
	clients := make([]*agentproto.Client, agents)
	for i := range clients {
		clients[i] = bb.DialAgent(b)
		defer clients[i].Close()
	}
	call := func(c *agentproto.Client, res *json.RawMessage) error {
		return c.Call(context.Background(), agentproto.TypeText, payload, res)
	}
	runAgents(b, len(payload), clients, call)
}

// runAgents calls call b.N times from len(clients) goroutines, one per
// client (or as near as GOMAXPROCS allows).
func runAgents[C any](b *testing.B, size int, clients []C, call func(C, *json.RawMessage) error) {
	var stats runStats
	b.SetBytes(int64(size))
	b.ReportAllocs()
	if len(clients) == 1 {
		var res json.RawMessage
		lat := make([]time.Duration, 0, 1<<16)
		stats.begin()
		for b.Loop() {
			t0 := time.Now()
			if err := call(clients[0], &res); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		stats.merge(lat)
		stats.report(b)
		return
	}
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((len(clients) + procs - 1) / procs)
	var next atomic.Int64
	stats.begin()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[int(next.Add(1)-1)%len(clients)]
		var res json.RawMessage
		var lat []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if err := call(c, &res); err != nil {
				b.Error(err)
				return
			}
			lat = append(lat, time.Since(t0))
		}
		stats.merge(lat)
	})
	stats.report(b)
}

// screenshotResult returns a browser.screenshot result whose data URL
// makes it about n bytes.
func screenshotResult(n int) json.RawMessage {
	return json.RawMessage(`{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,` +
		string(bytes.Repeat([]byte("QUJD"), n/4)) + `"}`)
}

// BenchmarkRelayLargeResult measures one request whose result is 1, 4 or
// 16 MiB (the extension may send up to 64 MiB): the cost should grow
// linearly with the size. The "screenshot" case decodes the result as
// Client.Screenshot does, image bytes included.
func BenchmarkRelayLargeResult(b *testing.B) {
	for _, mib := range []int{1, 4, 16} {
		big := screenshotResult(mib << 20)
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			bb, c := startLargeResultBridge(b, big)
			defer bb.Stop()
			defer c.Close()
			var stats runStats
			b.SetBytes(int64(len(big)))
			b.ReportAllocs()
			stats.begin()
			for b.Loop() {
				var res json.RawMessage
				if err := c.Call(context.Background(), agentproto.TypeScreenshot, nil, &res); err != nil {
					b.Fatal(err)
				}
				if len(res) != len(big) {
					b.Fatalf("got %d bytes", len(res))
				}
			}
			stats.report(b)
		})
	}
	big := screenshotResult(16 << 20)
	b.Run("16MiB/screenshot", func(b *testing.B) {
		bb, c := startLargeResultBridge(b, big)
		defer bb.Stop()
		defer c.Close()
		want := base64.StdEncoding.DecodedLen(16 << 20)
		var stats runStats
		b.SetBytes(int64(len(big)))
		b.ReportAllocs()
		stats.begin()
		for b.Loop() {
			shot, err := c.Screenshot(context.Background(), agentproto.ScreenshotParams{})
			if err != nil {
				b.Fatal(err)
			}
			if len(shot.Data) != want {
				b.Fatalf("got %d bytes", len(shot.Data))
			}
		}
		stats.report(b)
	})
}

func startLargeResultBridge(b *testing.B, result json.RawMessage) (*testbridge.Bench, *agentproto.Client) {
	bb := testbridge.StartBench(b, agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
		return result, nil
	}))
	return bb, bb.DialAgent(b)
}

// BenchmarkUnixEcho is the baseline: the same request frames echoed by a
// bare Unix-socket server reading and writing them with nativemsg.
func BenchmarkUnixEcho(b *testing.B) {
	for _, p := range benchPayloads {
		frame := []byte(`{"id":"1","type":"browser.type","payload":` + string(payloadOf(p.size)) + `,"token":"bench-token"}`)
		for _, agents := range []int{1, 8} {
			b.Run(fmt.Sprintf("agents=%d/payload=%s", agents, p.name), func(b *testing.B) {
				path, stop := startEcho(b)
				defer stop()
				conns := make([]*echoConn, agents)
				for i := range conns {
					conns[i] = dialEcho(b, path)
					defer conns[i].Close()
				}
				runAgents(b, len(frame), conns, func(c *echoConn, _ *json.RawMessage) error {
					return c.roundTrip(frame)
				})
			})
		}
	}
}

type echoConn struct {
	*nativemsg.Conn
	buf []byte
}

func (c *echoConn) roundTrip(frame []byte) error {
	if err := c.WriteMessage(frame); err != nil {
		return err
	}
	var err error
	c.buf, err = c.ReadMessage(c.buf[:0])
	return err
}

func dialEcho(tb testing.TB, path string) *echoConn {
	nc, err := net.Dial("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	return &echoConn{Conn: nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{WriteLimit: 1<<32 - 1, ReadBufferSize: 32 << 10})}
}

func startEcho(tb testing.TB) (string, func()) {
	path := filepath.Join(tb.TempDir(), "echo.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() {
				c := nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{WriteLimit: 1<<32 - 1, ReadBufferSize: 32 << 10})
				var buf []byte
				for {
					var err error
					if buf, err = c.ReadMessage(buf[:0]); err != nil {
						return
					}
					if c.WriteMessage(buf) != nil {
						return
					}
				}
			})
		}
	})
	return path, func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}
