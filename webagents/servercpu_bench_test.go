package webagents_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbridge/agentbridge/internal/wabench"
)

// BenchmarkServerCPU measures the server CPU per batch of the bench site's
// three-operation batch (search → get_product and set_highlight, both
// with a $ref to the search result) on a Handler, with and without an
// Idempotency-Key (the memory store), against the bare net/http floor,
// each server in a process of its own and the load (8 keep-alive clients)
// in this one; every iteration is one interleaved round. Goals: the
// Handler ≤ 2.0× the floor's CPU per batch ("handler-x-floor"), keyed ≤
// 2.5× ("keyed-x-floor"). Run with -benchtime=5x for five rounds; add
// -wabench.cpuprofile=DIR for a profile of each server process.
func BenchmarkServerCPU(b *testing.B) {
	wabench.Benchmark(b, "TestServerCPUChild", []string{wabench.TargetFloor, wabench.TargetHandler, wabench.TargetKeyed})
}

// TestServerCPUChild is BenchmarkServerCPU's server process; it skips when
// not started by it.
func TestServerCPUChild(t *testing.T) { wabench.ChildServe(t, nil) }

// BenchmarkSiteServeHTTP is the Handler's share of BenchmarkServerCPU in
// this process, without the network: the bench batch served to a
// recorder, for profiles and allocation counts.
func BenchmarkSiteServeHTTP(b *testing.B) {
	const origin = "http://127.0.0.1:8080"
	h, err := wabench.Site(origin, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, wabench.NewRequest(b.Context(), origin, ""))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body)
		}
	}
}
