package hostload_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/hostload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var hostBinary string

// TestMain builds the host once for every test.
func TestMain(m *testing.M) {
	bin, remove, err := hostload.Build(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBinary = bin
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { remove(); os.Exit(code) }))
}

func TestRunMeasuresTheBuiltHost(t *testing.T) {
	scenarios := []hostload.Scenario{
		{Name: "2 agents", Agents: 2, PayloadSize: 200, Requests: 300, Duration: time.Minute},
		{Name: "1 MiB result", Agents: 1, ResultSize: 1 << 20, Requests: 3, Duration: time.Minute},
	}
	results, err := hostload.Run(t.Context(), hostBinary, scenarios)
	require.NoError(t, err)
	require.Len(t, results, 2)
	for i, r := range results {
		assert.Equal(t, scenarios[i], r.Scenario)
		assert.Equal(t, scenarios[i].Requests, r.Requests, "bounded by the count, well within the time")
		assert.Positive(t, r.Elapsed)
		assert.Positive(t, r.PerSecond())
		assert.Positive(t, r.P50)
		assert.GreaterOrEqual(t, r.P99, r.P50)
		assert.Positive(t, r.Baseline, "a host that only starts and exits uses some CPU")
		assert.GreaterOrEqual(t, r.HostCPU, time.Duration(0))
		if runtime.GOOS == "linux" {
			assert.Positive(t, r.BaselineSwitches, "a host sleeps while it waits for input")
			assert.GreaterOrEqual(t, r.SwitchesPerRequest(), 0.0)
		}
	}
	// Relaying a 1 MiB result three times costs the host CPU time.
	assert.Positive(t, results[1].HostCPU)

	var table strings.Builder
	require.NoError(t, hostload.WriteTable(&table, results))
	assert.Contains(t, table.String(), "host voluntary switches per request |")
	assert.Contains(t, table.String(), "| 2 agents | 300 |")
	assert.Contains(t, table.String(), "| 1 MiB result | 3 |")
}

func TestRunRefusesAnUnboundedScenario(t *testing.T) {
	_, err := hostload.Run(t.Context(), hostBinary, []hostload.Scenario{{Name: "forever", Agents: 1, PayloadSize: 10}})
	assert.ErrorContains(t, err, "a scenario needs agents, a request bound and a duration")
}

func TestRunReportsAMissingBinary(t *testing.T) {
	_, err := hostload.Run(t.Context(), "/nonexistent/weboperator-host", hostload.ReferenceScenarios(time.Second))
	assert.Error(t, err)
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	tests := []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{ms(4, 1, 3, 2), 99, 4 * time.Millisecond},
		{ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, hostload.Percentile(tt.in, tt.p), "%v p%d", tt.in, tt.p)
	}
}

func TestPayloadSizes(t *testing.T) {
	assert.Len(t, hostload.Payload(200), 200)
	assert.Len(t, hostload.Payload(64<<10), 64<<10)
	assert.InDelta(t, 16<<20, len(hostload.ScreenshotResult(16<<20)), 64)
}

// A run cancelled while a host starts reports the cancellation with the
// host's log, read while the host may still be writing it.
func TestRunCancelledWhileTheHostStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := hostload.Run(ctx, hostBinary, []hostload.Scenario{{Name: "x", Agents: 1, PayloadSize: 10, Requests: 1, Duration: time.Second}})
	assert.ErrorIs(t, err, context.Canceled)
}
