package webagents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// noopResult is what the benchmark handlers return: already-encoded JSON, so
// the figures measure the SDK, not encoding/json on the handler's value.
var noopResult = json.RawMessage(`{"ok":true}`)

func noopHandlers(m *Manifest) map[string]ActionHandler {
	h := map[string]ActionHandler{}
	for name := range m.Actions {
		h[name] = ActionFunc(func(context.Context, *ActionRequest) (any, error) { return noopResult, nil })
	}
	return h
}

// BenchmarkPlanAndRun measures the planner and executor per operation, with
// no-op handlers and no pacing. Goal: ≤ 5 µs and ≤ 10 allocations per
// operation.
func BenchmarkPlanAndRun(b *testing.B) {
	m := rwManifest(b, `"pacing":{"minIntervalMs":0,"maxConcurrency":4}`)
	for _, shape := range []struct {
		name string
		ops  func(n int) []string
	}{
		{"reads", func(n int) []string {
			list := make([]string, n)
			for i := range list {
				list[i] = fmt.Sprintf(`{"id":"o%d","action":"r","input":{"q":"x"}}`, i)
			}
			return list
		}},
		{"read-write-read", func(n int) []string {
			list := make([]string, n)
			for i := range list {
				action := "r"
				if i%3 == 1 {
					action = "w"
				}
				list[i] = fmt.Sprintf(`{"id":"o%d","action":"%s","input":{"q":"x"}}`, i, action)
			}
			return list
		}},
	} {
		for _, n := range []int{3, 8, 32} {
			b.Run(fmt.Sprintf("%s/ops=%d", shape.name, n), func(b *testing.B) {
				batch, err := DecodeBatch([]byte(ops(shape.ops(n)...)))
				if err != nil {
					b.Fatal(err)
				}
				e := &Executor{Handlers: noopHandlers(m)}
				ctx := context.Background()
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				iterations := 0
				for b.Loop() {
					p, err := NewPlan(m, "", batch)
					if err != nil {
						b.Fatal(err)
					}
					if out := e.Run(ctx, p); out.Err != nil {
						b.Fatal(out.Err)
					}
					iterations++
				}
				runtime.ReadMemStats(&after)
				perOp := float64(n * iterations)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perOp, "ns/operation")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/perOp, "allocs/operation")
			})
		}
	}
}

// BenchmarkDecodeBatch measures strict decoding of the spec's batch.
func BenchmarkDecodeBatch(b *testing.B) {
	body := []byte(specBatch)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeBatch(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopbackBatch measures whole three-operation batches (find, add by
// reference, verify) through the Handler over loopback HTTP with 8
// concurrent clients, and, in the same run, the floor: a bare net/http
// handler that reads the same body and writes a response of the same size
// to the same 8 clients. The adapter sub-benchmark reports its cost as a
// multiple of the floor's ("x-floor"). Goals: ≥ 10,000 batches/s on 2
// cores, within 2× of the floor.
func BenchmarkLoopbackBatch(b *testing.B) {
	m := manifestWith(b, `"pacing":{"minIntervalMs":0,"maxConcurrency":2}`, `{
		"catalog.find":{"inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}},
		"cart.add":{"effect":"write"},
		"cart.state":{}}`)
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	h, err := NewHandler(m, map[string]ActionHandler{
		"catalog.find": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			return json.RawMessage(`{"productId":"kbd-75"}`), nil
		}),
		"cart.add": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			return json.RawMessage(`{"added":true}`), nil
		}),
		"cart.state": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			return json.RawMessage(`{"items":[{"productId":"kbd-75","quantity":1}]}`), nil
		}),
	}, &HandlerOptions{Origin: origin})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	// The floor answers with as many bytes as the adapter does.
	probe := httptest.NewRequest(http.MethodPost, origin+"/api/agent/workflow", strings.NewReader(specBatch))
	probe.Header.Set("Content-Type", "application/json")
	probe.RemoteAddr = srv.Listener.Addr().String()
	ctx := context.WithValue(probe.Context(), http.LocalAddrContextKey, srv.Listener.Addr())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, probe.WithContext(ctx))
	if rec.Code != http.StatusOK {
		b.Fatalf("probe: %d %s", rec.Code, rec.Body)
	}
	floorBody := bytes.Repeat([]byte("x"), rec.Body.Len())
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bufferPool.Get().(*bytes.Buffer)
		buf.Reset()
		_, _ = buf.ReadFrom(r.Body)
		bufferPool.Put(buf)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(floorBody)))
		_, _ = w.Write(floorBody)
	})
	var route atomic.Pointer[http.Handler]
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*route.Load()).ServeHTTP(w, r) })
	srv.Start()
	defer srv.Close()

	var floorRate float64
	for _, tc := range []struct {
		name    string
		handler http.Handler
	}{{"floor", floor}, {"adapter", h}} {
		b.Run(tc.name, func(b *testing.B) {
			route.Store(&tc.handler)
			rate := loopbackBatches(b, origin+"/api/agent/workflow")
			if tc.name == "floor" {
				floorRate = rate
			} else if floorRate > 0 {
				b.ReportMetric(floorRate/rate, "x-floor")
			}
		})
	}
}

// loopbackBatches posts specBatch to endpoint from 8 concurrent clients for
// b's iterations and returns (and reports) batches per second.
func loopbackBatches(b *testing.B, endpoint string) float64 {
	const clients = 8
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	body := []byte(specBatch)

	send := func() error {
		req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return err
	}
	jobs := make(chan struct{})
	done := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range jobs {
				done <- send()
			}
		})
	}
	b.ReportAllocs()
	inFlight := 0
	var firstErr error
	for b.Loop() {
		if inFlight == clients {
			if err := <-done; err != nil && firstErr == nil {
				firstErr = err
			}
			inFlight--
		}
		jobs <- struct{}{}
		inFlight++
	}
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "batches/s")
	close(jobs)
	for ; inFlight > 0; inFlight-- {
		if err := <-done; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return rate
}
