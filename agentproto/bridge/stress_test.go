package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/internal/testbridge"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/internal/peakmem"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stress test drives a whole bridge over its real transports (agents on
// a Unix socket, the extension on OS pipes) with many agents, each with
// many requests in flight, sizes spread over every path of the relay
// (copied and borrowed frames, around wire.CopyLimit, over the socket and
// pipe buffers, over Chrome's 1 MiB), an extension answering out of order,
// and agents vanishing with requests in flight. Every reply is checked
// byte for byte against its request: with the pool's debug checks on (see
// TestMain), a buffer reused too early shows as a wrong byte.

// stressPayload is a request payload: a fixed prefix the stand-in
// extension reads without parsing, then padding. The extension checks the
// payload byte for byte and answers {"a":…,"n":…,"fill":"<resultSize
// bytes>"}.
func stressPayload(agent, n, resultSize, padSize int) []byte {
	p := fmt.Appendf(nil, `{"a":%d,"n":%d,"rs":%d,"ps":%d,"pad":"`, agent, n, resultSize, padSize)
	p = appendFill(p, agent, n, padSize)
	return append(p, `"}`...)
}

// appendFill appends size bytes that depend on agent and n (by copies
// that double, which the race detector checks once each, not by byte).
func appendFill(dst []byte, agent, n, size int) []byte {
	start := len(dst)
	dst = fmt.Appendf(dst, "%d.%d;", agent, n)
	unit := len(dst) - start
	if unit >= size {
		return dst[:start+size]
	}
	dst = slices.Grow(dst, size-unit)[:start+size]
	fill := dst[start:]
	for k := unit; k < size; k *= 2 {
		copy(fill[k:], fill[:k])
	}
	return dst
}

// isFill reports whether b is what appendFill(nil, agent, n, size)
// returns, without building a copy: the fill repeats its first unit, so
// it matches when it starts with the unit and equals itself shifted by
// one unit (two comparisons the race detector checks once each).
func isFill(b []byte, agent, n, size int) bool {
	var buf [48]byte
	unit := fmt.Appendf(buf[:0], "%d.%d;", agent, n)
	if len(b) != size {
		return false
	}
	if size <= len(unit) {
		return bytes.Equal(b, unit[:size])
	}
	return bytes.Equal(b[:len(unit)], unit) && bytes.Equal(b[len(unit):], b[:size-len(unit)])
}

// isStressPayload reports whether p is stressPayload(agent, n, resultSize,
// padSize), and isStressResult whether r is stressResult(agent, n,
// resultSize): checked in place, so that no request holds a second copy of
// its payload or result.
func isStressPayload(p []byte, agent, n, resultSize, padSize int) bool {
	var buf [96]byte
	prefix := fmt.Appendf(buf[:0], `{"a":%d,"n":%d,"rs":%d,"ps":%d,"pad":"`, agent, n, resultSize, padSize)
	return isFramed(p, prefix, `"}`, agent, n, padSize)
}

func isStressResult(r []byte, agent, n, resultSize int) bool {
	var buf [64]byte
	prefix := fmt.Appendf(buf[:0], `{"a":%d,"n":%d,"fill":"`, agent, n)
	return isFramed(r, prefix, `"}`, agent, n, resultSize)
}

func isFramed(b, prefix []byte, suffix string, agent, n, size int) bool {
	if len(b) != len(prefix)+size+len(suffix) || !bytes.HasPrefix(b, prefix) || !bytes.HasSuffix(b, []byte(suffix)) {
		return false
	}
	return isFill(b[len(prefix):len(b)-len(suffix)], agent, n, size)
}

func stressResult(agent, n, resultSize int) []byte {
	r := fmt.Appendf(make([]byte, 0, resultSize+64), `{"a":%d,"n":%d,"fill":"`, agent, n)
	r = appendFill(r, agent, n, resultSize)
	return append(r, `"}`...)
}

// parseStressPrefix reads a payload's numbers.
func parseStressPrefix(p []byte) (agent, n, resultSize, padSize int, err error) {
	_, err = fmt.Sscanf(string(p[:min(len(p), 80)]), `{"a":%d,"n":%d,"rs":%d,"ps":%d,`, &agent, &n, &resultSize, &padSize)
	return
}

// stressSize draws a size up to limit from a distribution that favours
// the relay's boundaries and keeps the total volume within what -race on
// two cores relays in seconds: mostly small; around wire.CopyLimit
// (copied or borrowed); the sizes the relay treats apart; a few large,
// log-uniform up to limit.
func stressSize(rng *rand.Rand, limit int) int {
	switch x := rng.IntN(1000); {
	case x < 830:
		return rng.IntN(2 << 10)
	case x < 930:
		return wire.CopyLimit + rng.IntN(4<<10) - 2<<10
	case x < 960:
		sizes := []int{31 << 10, wire.CopyLimit - 1, wire.CopyLimit, wire.CopyLimit + 1, 33 << 10}
		return sizes[rng.IntN(len(sizes))]
	case x < 995:
		return 64<<10 + rng.IntN(64<<10)
	case x < 997:
		sizes := []int{1<<20 - 100, 1 << 20, 1<<20 + 1, 5 << 20}
		return min(sizes[rng.IntN(len(sizes))], limit)
	default:
		return int(math.Exp(math.Log(256<<10) + rng.Float64()*(math.Log(float64(limit))-math.Log(256<<10))))
	}
}

// stressEvent is the i-th event of the stress test (i < 0 is the last).
func stressEvent(i int) []byte {
	if i < 0 {
		return []byte(`{"kind":"stress:end"}`)
	}
	size := []int{10, 100, 1000, 2000, 10, 100, 1000, 31 << 10, 33 << 10, 300 << 10}[i%10]
	e := fmt.Appendf(nil, `{"kind":"task:update","task":{"id":"e%d","pad":"`, i)
	e = appendFill(e, -i, i, size)
	return append(e, `"}}`...)
}

// stressHeapLimit is the soft memory limit TestStressRealTransports runs
// under: about what 400 requests in flight hold live, with room.
const stressHeapLimit = 192 << 20

// callsInFlight runs call(0) … call(count-1) on inFlight goroutines of
// wg, each taking the next n: all at once would hold every request's
// memory together (and, with -race, every goroutine's).
func callsInFlight(wg *sync.WaitGroup, count, inFlight int, call func(n int)) {
	var next atomic.Int64
	for range inFlight {
		wg.Go(func() {
			for n := int(next.Add(1) - 1); n < count; n = int(next.Add(1) - 1) {
				call(n)
			}
		})
	}
}

func TestStressRealTransports(t *testing.T) {
	requireUnixSockets(t)
	// inFlight is how many requests each agent keeps in flight: with
	// agents, 400 at the host at once, enough to fill its queues and pipes
	// and answer out of order, while what they hold (each payload and
	// result is copied at every hop) keeps the run within testbridge.PeakLimit (see
	// TestMain) under -race.
	agents, perAgent, inFlight, vanishing := 50, 200, 8, 10
	if testing.Short() {
		agents, perAgent, inFlight, vanishing = 10, 50, 8, 3
	}
	const maxPayload, maxResult = 2 << 20, 8 << 20
	// The garbage collector runs as the heap nears stressHeapLimit rather
	// than only once it has doubled: with -race each byte of heap costs
	// several more of shadow memory.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(stressHeapLimit))
	if peak, err := peakmem.Peak(); err == nil {
		t.Logf("peak resident memory of the test binary before: %s", peakmem.Format(peak))
	}

	var answered atomic.Int64
	vanishingSeen := make([]atomic.Int32, vanishing) // requests of each vanishing agent at the extension
	handler := agentprototest.HandlerFunc(func(ctx context.Context, r *agentprototest.Request) (any, error) {
		agent, n, rs, ps, err := parseStressPrefix(r.Payload)
		if err != nil {
			return nil, err
		}
		if !isStressPayload(r.Payload, agent, n, rs, ps) {
			return nil, errors.New("payload damaged on its way")
		}
		// Out of order: each answer after a delay of its own.
		select {
		case <-time.After(time.Duration((agent*7919+n*104729)%500) * time.Microsecond):
		case <-ctx.Done():
			return nil, agentprototest.ErrNoReply
		}
		if agent < 0 { // a vanishing agent's request: answered late
			vanishingSeen[-1-agent].Add(1)
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				return nil, agentprototest.ErrNoReply
			}
		}
		answered.Add(1)
		return json.RawMessage(stressResult(agent, n, rs)), nil
	})
	hostEnd, browserEnd, err := nativemsg.OSPipe()
	require.NoError(t, err)
	b := agentprototest.NewBridgeOn(hostEnd, browserEnd, &agentprototest.BridgeOptions{
		Server:    bridge.ServerOptions{Token: "stress"},
		Host:      bridge.HostOptions{MaxLinkQueue: 1 << 30}, // no congestion refusals
		Extension: agentprototest.Options{Handler: handler},
	})
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))
	path := filepath.Join(shortTempDir(t), "s.sock")
	l, err := bridge.ListenUnix(t.Context(), path)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.Server.Serve(l) }()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opts := &agentproto.ClientOptions{Token: "stress"}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		failures  []string
		tooLarge  atomic.Int64
		okReplies atomic.Int64
		timedOut  atomic.Int64
		sent      atomic.Int64 // payload and result bytes
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	const events = 30
	var eventsSeen atomic.Int64
	start := time.Now()
	for agent := range agents {
		c, err := agentproto.Dial(ctx, path, opts)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Health(ctx) // the server has taken the connection: events reach it
		require.NoError(t, err)
		// Every event reaches every agent, intact (a slow one may drop
		// the oldest, by the subscription's policy).
		sub := c.Subscribe(&agentproto.SubscribeOptions{Buffer: 2 * events})
		wg.Go(func() {
			for e := range sub.Events() {
				if e.Kind == "stress:end" {
					return
				}
				var i int
				if _, err := fmt.Sscanf(string(e.Raw), `{"kind":"task:update","task":{"id":"e%d"`, &i); err != nil ||
					!bytes.Equal(e.Raw, stressEvent(i)) {
					fail("agent %d: event of %d bytes damaged", agent, len(e.Raw))
				}
				eventsSeen.Add(1)
			}
			fail("agent %d: events ended early", agent)
		})
		callsInFlight(&wg, perAgent, inFlight, func(n int) {
			rng := rand.New(rand.NewPCG(uint64(agent), uint64(n)))
			rs := stressSize(rng, maxResult)
			payload := stressPayload(agent, n, rs, stressSize(rng, maxPayload))
			sent.Add(int64(len(payload) + rs))
			callCtx := ctx
			late := n%50 == 7 // a timeout over before the answer can come
			if late {
				var cancel context.CancelFunc
				callCtx, cancel = context.WithTimeout(ctx, time.Duration(2+n%3)*time.Millisecond)
				defer cancel()
			}
			var res json.RawMessage
			err := c.Call(callCtx, agentproto.TypeExtract, json.RawMessage(payload), &res)
			switch {
			case late && errors.Is(err, agentproto.ErrTimeout):
				timedOut.Add(1)
			case errors.Is(err, agentproto.ErrRequestTooLarge):
				if len(payload) < nativemsg.DefaultWriteLimit-200 {
					fail("agent %d request %d of %d bytes refused as too large", agent, n, len(payload))
				}
				tooLarge.Add(1)
			case err != nil:
				fail("agent %d request %d: %v", agent, n, err)
			case !isStressResult(res, agent, n, rs):
				fail("agent %d request %d: reply of %d bytes is not its own (payload %d bytes)", agent, n, len(res), len(payload))
			default:
				okReplies.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := range events {
			if err := b.Extension.Emit(json.RawMessage(stressEvent(i))); err != nil {
				fail("emit: %v", err)
			}
			time.Sleep(10 * time.Millisecond) // spread over the run
		}
		if err := b.Extension.Emit(json.RawMessage(stressEvent(-1))); err != nil {
			fail("emit: %v", err)
		}
	})
	// Agents that vanish with requests in flight, while the others run.
	for v := range vanishing {
		wg.Go(func() {
			c, err := agentproto.Dial(ctx, path, opts)
			if err != nil {
				fail("vanishing agent %d: %v", v, err)
				return
			}
			var calls sync.WaitGroup
			for n := range 20 {
				calls.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(1000+v), uint64(n)))
					payload := stressPayload(-1-v, n, stressSize(rng, maxResult), stressSize(rng, 1<<20-1024))
					err := c.Call(ctx, agentproto.TypeExtract, json.RawMessage(payload), nil)
					if err != nil && !errors.Is(err, agentproto.ErrClosed) { // answered before it went, or lost
						fail("vanishing agent %d request %d: %v, want ErrClosed", v, n, err)
					}
				})
			}
			// Gone with requests at the extension, and others perhaps
			// still on their way to it.
			for vanishingSeen[v].Load() < 5 && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			c.Close()
			calls.Wait()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	assert.Empty(t, failures)
	assert.Equal(t, int64(agents*perAgent), okReplies.Load()+tooLarge.Load()+timedOut.Load(), "one reply each")
	assert.Positive(t, tooLarge.Load(), "some requests were over Chrome's limit")
	assert.Equal(t, int64(agents*events), eventsSeen.Load(), "every event to every agent")
	require.Eventually(t, func() bool { return b.Host.Pending() == 0 }, 10*time.Second, time.Millisecond,
		"nothing left pending once every agent has its answer or is gone")
	require.NoError(t, b.Server.Close())
	assert.ErrorIs(t, <-served, bridge.ErrServerClosed)
	t.Logf("%d agents × %d requests (%d in flight each) and %d vanishing agents in %v: %d answered by the extension, %d refused as too large, %d timed out, %d MB of payloads and results",
		agents, perAgent, inFlight, vanishing, elapsed.Round(time.Millisecond), answered.Load(), tooLarge.Load(), timedOut.Load(), sent.Load()>>20)
	// The heaviest test of the package stays within its memory budget
	// (TestMain checks the whole package's peak again at the end).
	if peak, err := peakmem.Peak(); err == nil {
		t.Logf("peak resident memory of the test binary so far: %s", peakmem.Format(peak))
		assert.NoError(t, peakmem.Check(testbridge.PeakLimit))
	}
}

func TestStressChecks(t *testing.T) {
	for _, size := range []int{0, 3, 4, 5, 100, wire.CopyLimit + 1} {
		p := stressPayload(7, 42, 9, size)
		assert.True(t, isStressPayload(p, 7, 42, 9, size), "size %d", size)
		assert.False(t, isStressPayload(p, 7, 43, 9, size), "another request's")
		assert.False(t, isStressPayload(p[:len(p)-1], 7, 42, 9, size), "cut")
		for _, at := range []int{0, len(p) / 2, len(p) - 3, len(p) - 1} {
			bad := slices.Clone(p)
			bad[at] ^= 1
			assert.False(t, isStressPayload(bad, 7, 42, 9, size), "size %d, byte %d changed", size, at)
		}
		r := stressResult(7, 42, size)
		assert.True(t, isStressResult(r, 7, 42, size), "size %d", size)
		assert.False(t, isStressResult(r, 8, 42, size))
		assert.False(t, isStressResult(append(slices.Clone(r), ' '), 7, 42, size))
		if size > 0 {
			bad := slices.Clone(r)
			bad[len(bad)-3] ^= 1
			assert.False(t, isStressResult(bad, 7, 42, size), "last byte of the fill changed")
		}
	}
}
