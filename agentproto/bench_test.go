package agentproto_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// benchBridge is a bridge as it runs for real: agents on a Unix socket, the
// host's link to the extension on OS pipes (as Chrome's stdio), the stand-in
// extension answering in its reading goroutine.
type benchBridge struct {
	path string
	srv  *agentproto.Server
	host *agentproto.Host
	ext  *agentprototest.Extension
	wg   sync.WaitGroup
}

type pipeCloser []*os.File

func (p pipeCloser) Close() error {
	for _, f := range p {
		f.Close()
	}
	return nil
}

func osPipeLink(tb testing.TB) (host, browser *nativemsg.Conn) {
	hostR, extW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	extR, hostW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range []*os.File{hostR, hostW} {
		syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), 1031 /* F_SETPIPE_SZ */, 1<<20)
	}
	host = nativemsg.NewConn(hostR, hostW, pipeCloser{hostR, hostW}, &nativemsg.ConnOptions{ReadBufferSize: 64 << 10})
	browser = nativemsg.NewConn(extR, extW, pipeCloser{extR, extW},
		&nativemsg.ConnOptions{ReadLimit: nativemsg.DefaultWriteLimit, WriteLimit: nativemsg.DefaultReadLimit, ReadBufferSize: 64 << 10})
	return host, browser
}

func startBenchBridge(tb testing.TB, handler agentprototest.Handler) *benchBridge {
	hostConn, browserConn := osPipeLink(tb)
	bb := &benchBridge{path: filepath.Join(tb.TempDir(), "bridge.sock")}
	bb.ext = agentprototest.NewExtension(browserConn, &agentprototest.Options{Handler: handler, Serial: true})
	bb.host = agentproto.NewHost(hostConn, nil)
	bb.srv = agentproto.NewServer(agentproto.ServerOptions{Extension: bb.host, Token: "bench-token"})
	l, err := agentproto.ListenUnix(context.Background(), bb.path)
	if err != nil {
		tb.Fatal(err)
	}
	bb.wg.Go(func() { bb.srv.Serve(l) })
	bb.wg.Go(func() { bb.host.Run(context.Background()) })
	for !bb.host.Online() {
		time.Sleep(time.Millisecond)
	}
	return bb
}

func (bb *benchBridge) close() {
	bb.srv.Close()
	bb.host.Close()
	bb.ext.Close()
	bb.wg.Wait()
}

func (bb *benchBridge) dial(tb testing.TB) *agentproto.Client {
	c, err := agentproto.Dial(context.Background(), bb.path, &agentproto.ClientOptions{Token: "bench-token"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// payloadOf returns a JSON object of about n bytes.
func payloadOf(n int) json.RawMessage {
	pad := max(n-len(`{"ref":"@e1","text":""}`), 0)
	return json.RawMessage(`{"ref":"@e1","text":"` + string(bytes.Repeat([]byte("x"), pad)) + `"}`)
}

var benchPayloads = []struct {
	name string
	size int
}{{"200B", 200}, {"64KiB", 64 << 10}}

// latencies records per-request durations and reports their median.
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
	b.ReportMetric(float64(l.d[len(l.d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkRoundTrip measures agent → socket → host → extension → back.
func BenchmarkRoundTrip(b *testing.B) {
	for _, p := range benchPayloads {
		payload := payloadOf(p.size)
		b.Run("agents=1/payload="+p.name, func(b *testing.B) {
			bb := startBenchBridge(b, agentprototest.Echo)
			defer bb.close()
			c := bb.dial(b)
			defer c.Close()
			ctx := context.Background()
			var lat latencies
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				var res json.RawMessage
				if err := c.Call(ctx, agentproto.TypeType, payload, &res); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(start))
			}
			lat.report(b)
		})
		b.Run("agents=8/payload="+p.name, func(b *testing.B) {
			benchParallelAgents(b, 8, payload, func(tb testing.TB) func(context.Context, json.RawMessage) error {
				return nil
			})
		})
	}
}

func benchParallelAgents(b *testing.B, agents int, payload json.RawMessage, _ any) {
	bb := startBenchBridge(b, agentprototest.Echo)
	defer bb.close()
	clients := make([]*agentproto.Client, agents)
	for i := range clients {
		clients[i] = bb.dial(b)
		defer clients[i].Close()
	}
	var next atomic.Int64
	var lat latencies
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.SetParallelism((agents + 1) / 2)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := clients[int(next.Add(1)-1)%agents]
		ctx := context.Background()
		var res json.RawMessage
		for pb.Next() {
			t0 := time.Now()
			if err := c.Call(ctx, agentproto.TypeType, payload, &res); err != nil {
				b.Error(err)
				return
			}
			lat.add(time.Since(t0))
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	lat.report(b)
}

// BenchmarkRelayLargeResult measures one request whose result is 1, 4 or
// 16 MiB (the extension may send up to 64 MiB): the cost should grow
// linearly with the size.
func BenchmarkRelayLargeResult(b *testing.B) {
	for _, mib := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			big := json.RawMessage(`{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,` +
				string(bytes.Repeat([]byte("QUJD"), mib<<20/4)) + `"}`)
			bb := startBenchBridge(b, agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
				return big, nil
			}))
			defer bb.close()
			c := bb.dial(b)
			defer c.Close()
			ctx := context.Background()
			b.SetBytes(int64(len(big)))
			b.ReportAllocs()
			for b.Loop() {
				var res json.RawMessage
				if err := c.Call(ctx, agentproto.TypeScreenshot, nil, &res); err != nil {
					b.Fatal(err)
				}
				if len(res) != len(big) {
					b.Fatalf("got %d bytes", len(res))
				}
			}
		})
	}
}

// BenchmarkUnixEcho is the baseline: the same request frames echoed by a
// bare Unix-socket server reading and writing them with nativemsg.
func BenchmarkUnixEcho(b *testing.B) {
	for _, p := range benchPayloads {
		frame := []byte(`{"id":"1","type":"browser.type","payload":` + string(payloadOf(p.size)) + `,"token":"bench-token"}`)
		b.Run("agents=1/payload="+p.name, func(b *testing.B) {
			path, stop := startEcho(b)
			defer stop()
			conn := dialEcho(b, path)
			defer conn.Close()
			var lat latencies
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			buf := make([]byte, 0, len(frame))
			for b.Loop() {
				t0 := time.Now()
				if err := conn.WriteMessage(frame); err != nil {
					b.Fatal(err)
				}
				var err error
				if buf, err = conn.ReadMessage(buf[:0]); err != nil {
					b.Fatal(err)
				}
				lat.add(time.Since(t0))
			}
			lat.report(b)
		})
		b.Run("agents=8/payload="+p.name, func(b *testing.B) {
			path, stop := startEcho(b)
			defer stop()
			var lat latencies
			b.SetBytes(int64(len(frame)))
			b.SetParallelism(4)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				conn := dialEcho(b, path)
				defer conn.Close()
				buf := make([]byte, 0, len(frame))
				for pb.Next() {
					t0 := time.Now()
					if err := conn.WriteMessage(frame); err != nil {
						b.Error(err)
						return
					}
					var err error
					if buf, err = conn.ReadMessage(buf[:0]); err != nil {
						b.Error(err)
						return
					}
					lat.add(time.Since(t0))
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			lat.report(b)
		})
	}
}

func dialEcho(tb testing.TB, path string) *nativemsg.Conn {
	nc, err := net.Dial("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	return nativemsg.NewConn(nc, nc, nc, &nativemsg.ConnOptions{WriteLimit: 1<<32 - 1, ReadBufferSize: 32 << 10})
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
