package wabench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

var (
	roundFlag   = flag.Duration("wabench.round", time.Second, "wabench: how long each target is loaded in each round")
	clientsFlag = flag.Int("wabench.clients", 8, "wabench: keep-alive clients")
	profileFlag = flag.String("wabench.cpuprofile", "", "wabench: write a CPU profile of each server process into this directory (<target>.pprof)")
)

// EnvTarget names, in the environment of a test binary re-executed as a
// server process, the target it serves.
const EnvTarget = "WABENCH_TARGET"

// Keys makes Idempotency-Keys no other run has used.
type Keys struct {
	prefix string
	n      atomic.Int64
}

// NewKeys returns a key generator with a random prefix.
func NewKeys() *Keys {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Keys{prefix: hex.EncodeToString(b[:])}
}

// Next returns a fresh key.
func (k *Keys) Next() string { return k.prefix + "-" + strconv.FormatInt(k.n.Add(1), 10) }

// Figures add up a target's rounds.
type Figures struct {
	Target    string
	Batches   int
	Elapsed   time.Duration
	CPU       time.Duration
	Latencies []time.Duration
}

func (f *Figures) add(r Round) {
	f.Batches += r.Batches
	f.Elapsed += r.Elapsed
	f.CPU += r.CPU
	f.Latencies = append(f.Latencies, r.Latencies...)
}

// Rate is batches per second.
func (f *Figures) Rate() float64 { return float64(f.Batches) / f.Elapsed.Seconds() }

// CPUPerBatch is the server's CPU time per batch.
func (f *Figures) CPUPerBatch() time.Duration {
	if f.Batches == 0 {
		return 0
	}
	return f.CPU / time.Duration(f.Batches)
}

// P50 is the median latency a client saw.
func (f *Figures) P50() time.Duration {
	if len(f.Latencies) == 0 {
		return 0
	}
	l := slices.Clone(f.Latencies)
	slices.Sort(l)
	return l[len(l)/2]
}

// ChildServe is the server side of [Benchmark]: called from a test of the
// re-executed test binary, it serves the target [EnvTarget] names with the
// store newStore makes (nil, or a nil newStore: the memory store) and
// exits the process when the benchmark closes its stdin. It returns at once
// when EnvTarget is not set.
func ChildServe(t testing.TB, newStore func(target string) webagents.IdempotencyStore) {
	target := os.Getenv(EnvTarget)
	if target == "" {
		t.Skip("the server process of the wabench benchmarks")
	}
	var store webagents.IdempotencyStore
	if newStore != nil {
		store = newStore(target)
	}
	if err := Serve(target, store, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Exit now: the test framework's leak checks have nothing to say
	// about a server process that served until told to stop.
	os.Exit(0)
}

// Benchmark runs targets, each in a server process of its own (the test
// binary re-executed to run the test named child, which calls
// [ChildServe]), and loads them in interleaved rounds: every b.Loop
// iteration is one round of -wabench.round against each target in turn,
// from -wabench.clients keep-alive clients. Load and servers share the
// machine; interleaving spreads what else runs on it over all targets.
// It reports each target's batches/s, p50 and server CPU per batch, and
// each one's CPU per batch ÷ the floor's (targets[0] must be the floor),
// and logs the figures as a Markdown table.
func Benchmark(b *testing.B, child string, targets []string, env ...string) {
	if targets[0] != TargetFloor {
		b.Fatal("wabench: the first target must be the floor")
	}
	servers := make([]*Server, len(targets))
	for i, target := range targets {
		cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), EnvTarget+"="+target), env...)
		s, err := Start(target, cmd)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		servers[i] = s
	}
	if *profileFlag != "" {
		for _, s := range servers {
			if err := s.StartProfile(filepath.Join(*profileFlag, s.Target+".pprof")); err != nil {
				b.Fatal(err)
			}
		}
	}
	keys := NewKeys()
	figures := make([]*Figures, len(servers))
	for i, s := range servers {
		figures[i] = &Figures{Target: s.Target}
	}
	ctx := context.Background()
	for b.Loop() {
		for i, s := range servers {
			r, err := s.Load(ctx, *clientsFlag, *roundFlag, keys)
			if err != nil {
				b.Fatalf("%s: %v", s.Target, err)
			}
			figures[i].add(r)
		}
	}
	b.StopTimer()
	if *profileFlag != "" {
		for _, s := range servers {
			if err := s.StopProfile(); err != nil {
				b.Fatal(err)
			}
		}
	}
	floor := figures[0].CPUPerBatch()
	for _, f := range figures {
		b.ReportMetric(f.Rate(), f.Target+"-batches/s")
		b.ReportMetric(float64(f.CPUPerBatch().Nanoseconds())/1e3, f.Target+"-cpu-µs/batch")
		if f.Target != TargetFloor {
			b.ReportMetric(float64(f.CPUPerBatch())/float64(floor), f.Target+"-x-floor")
		}
	}
	b.Log("\n" + Table(figures))
}

// Table renders figures as docs/benchmarks.md's Markdown table; figures[0] is the
// floor.
func Table(figures []*Figures) string {
	var s strings.Builder
	s.WriteString("| target | batches/s | p50 | server CPU per batch | ÷ floor |\n|---|---|---|---|---|\n")
	floor := figures[0].CPUPerBatch()
	for _, f := range figures {
		fmt.Fprintf(&s, "| %s | %.0f | %.2f ms | %.1f µs | %.2f× |\n", f.Target, f.Rate(),
			float64(f.P50().Microseconds())/1e3, float64(f.CPUPerBatch().Nanoseconds())/1e3,
			float64(f.CPUPerBatch())/float64(floor))
	}
	return s.String()
}
