// Package hostload measures the built weboperator-host from outside, as a
// browser and agents use it: it starts the binary exactly as Chrome does
// (argv[1] "chrome-extension://<id>/", the binary's folder as working
// directory, the environment inherited plus WEBOPERATOR_API_TOKEN and
// WEBOPERATOR_AGENT_SOCKET, standard input and output as pipes to a
// stand-in extension running in this process), then drives N agents over
// the real Unix socket and reports requests per second, p50 and p99
// latency, and the host process's CPU time from its resource usage.
//
// Each scenario runs in a host process of its own, so that the process's
// CPU time (read from its rusage once it has exited) belongs to that
// scenario alone; the CPU time of a host that starts, says hello, answers
// one bridge.health and exits is measured once and subtracted. Every
// scenario is bounded in requests and in time, and only the socket (and
// no network address) is used: the host's HTTP API is turned off
// (WEBOPERATOR_BRIDGE_PORT=0).
package hostload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// HostPackage is the package of the host binary Build builds.
const HostPackage = "github.com/agentbridge/agentbridge/examples/weboperator-host"

// ExtensionID is the extension id the host is started for.
const ExtensionID = "pgnpnlnhjmjbmobnchmlaaonbieoelff"

const token = "hostload-token"

// Scenario is one measurement.
type Scenario struct {
	Name string
	// Agents is the number of agents, each with its own connection and
	// one request in flight at a time.
	Agents int
	// PayloadSize is the size of each request's payload, which the
	// extension echoes as the result.
	PayloadSize int
	// ResultSize, when positive, makes the extension answer every
	// request with a browser.screenshot result of about this size
	// instead of echoing (agents then send no payload).
	ResultSize int
	// Requests bounds the requests of the scenario; Duration bounds its
	// time. The scenario ends at whichever comes first.
	Requests int
	Duration time.Duration
}

// ReferenceScenarios are the scenarios of the reference host's published
// figures (see the issue): 1 and 8 agents with 200-byte payloads, 8
// agents with 64 KiB payloads, and a 16 MiB result.
func ReferenceScenarios(d time.Duration) []Scenario {
	return []Scenario{
		{Name: "1 agent, 200 B", Agents: 1, PayloadSize: 200, Requests: 500_000, Duration: d},
		{Name: "8 agents, 200 B", Agents: 8, PayloadSize: 200, Requests: 1_000_000, Duration: d},
		{Name: "1 agent, 64 KiB", Agents: 1, PayloadSize: 64 << 10, Requests: 200_000, Duration: d},
		{Name: "8 agents, 64 KiB", Agents: 8, PayloadSize: 64 << 10, Requests: 200_000, Duration: d},
		{Name: "16 MiB result", Agents: 1, ResultSize: 16 << 20, Requests: 10, Duration: 4 * d},
	}
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario Scenario
	// Requests is the number of requests answered.
	Requests int
	// Elapsed is the time from the first request to the last answer.
	Elapsed time.Duration
	// P50 and P99 are the latencies of single requests.
	P50, P99 time.Duration
	// HostCPU is the host process's user and system CPU time, less that
	// of a host that only starts and exits (Baseline).
	HostCPU time.Duration
	// Baseline is what was subtracted from HostCPU.
	Baseline time.Duration
	// HostSwitches is the host process's voluntary context switches
	// (times one of its threads went to sleep: waiting for input, parking
	// an idle thread), summed over all its threads from its resource
	// usage, less those of a host that only starts and exits
	// (BaselineSwitches). -1 where the system does not report them.
	HostSwitches, BaselineSwitches int64
}

// SwitchesPerRequest is the host's voluntary context switches per
// request, or -1 when unknown.
func (r *Result) SwitchesPerRequest() float64 {
	if r.Requests == 0 || r.HostSwitches < 0 {
		return -1
	}
	return float64(r.HostSwitches) / float64(r.Requests)
}

// PerSecond is the rate of answered requests.
func (r *Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// CPUPerRequest is the host's CPU time per request.
func (r *Result) CPUPerRequest() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.HostCPU / time.Duration(r.Requests)
}

// Build builds the host binary (with the go command, from within this
// module) into a new temporary folder and returns its path, and a function
// that removes the folder.
func Build(ctx context.Context) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "weboperator-host")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "weboperator-host")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, HostPackage)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("hostload: building the host: %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return bin, remove, nil
}

// Run measures each scenario with the host binary at bin, in turn.
func Run(ctx context.Context, bin string, scenarios []Scenario) ([]Result, error) {
	baseline, err := measureBaseline(ctx, bin)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, sc := range scenarios {
		res, err := runScenario(ctx, bin, sc)
		if err != nil {
			return results, fmt.Errorf("hostload: %s: %w", sc.Name, err)
		}
		res.Baseline = baseline.cpu
		res.HostCPU = max(res.HostCPU-baseline.cpu, 0)
		res.BaselineSwitches = baseline.switches
		if res.HostSwitches >= 0 && baseline.switches >= 0 {
			res.HostSwitches = max(res.HostSwitches-baseline.switches, 0)
		}
		results = append(results, *res)
	}
	return results, nil
}

// host is one host process started as Chrome starts it, joined to a
// stand-in extension.
type host struct {
	cmd    *exec.Cmd
	ext    *agentprototest.Extension
	socket string
	dir    string
	stderr syncbuf.Buffer // written by exec's copying goroutine while the host runs
	done   chan error
}

func startHost(bin string, handler agentprototest.Handler) (*host, error) {
	dir, err := os.MkdirTemp("", "hostload") // short: socket paths are limited to 108 bytes
	if err != nil {
		return nil, err
	}
	h := &host{dir: dir, socket: filepath.Join(dir, "bridge.sock"), done: make(chan error, 1)}
	// The host's standard streams are pipes whose other ends are the
	// browser's (here, this process's stand-in extension).
	hostIn, extOut, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	extIn, hostOut, err := os.Pipe()
	if err != nil {
		hostIn.Close()
		extOut.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	h.cmd = exec.Command(bin, nativemsg.ExtensionOrigin(ExtensionID))
	h.cmd.Dir = filepath.Dir(bin)
	h.cmd.Env = append(os.Environ(),
		agentproto.EnvToken+"="+token,
		agentproto.EnvSocket+"="+h.socket,
		agentproto.EnvBridgePort+"=0")
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = hostIn, hostOut, &h.stderr
	err = h.cmd.Start()
	hostIn.Close()
	hostOut.Close()
	if err != nil {
		extIn.Close()
		extOut.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { h.done <- h.cmd.Wait() }()
	browser := nativemsg.NewConn(extIn, extOut, closeAll{extIn, extOut}, &nativemsg.ConnOptions{
		ReadLimit: nativemsg.DefaultWriteLimit, WriteLimit: nativemsg.DefaultReadLimit, ReadBufferSize: 64 << 10})
	h.ext = agentprototest.NewExtension(browser, &agentprototest.Options{Handler: handler, Serial: true})
	return h, nil
}

type closeAll []*os.File

func (c closeAll) Close() error {
	for _, f := range c {
		f.Close()
	}
	return nil
}

// dial connects an agent once the host serves its socket with the
// extension online.
func (h *host) dial(ctx context.Context) (*agentproto.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		c, err := agentproto.Dial(ctx, h.socket, &agentproto.ClientOptions{Token: token})
		if err == nil {
			health, err := c.Health(ctx)
			if err == nil && health.ExtensionOnline() {
				return c, nil
			}
			c.Close()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the host did not come up: %w; its log: %s", ctx.Err(), tail(h.stderr.String()))
		case err := <-h.done:
			h.done <- err
			return nil, fmt.Errorf("the host exited: %v; its log: %s", err, tail(h.stderr.String()))
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// usage is what a host process used.
type usage struct {
	cpu      time.Duration
	switches int64 // voluntary context switches, -1 when unknown
}

// stop closes the extension's end of the link, as a browser does when the
// extension disconnects, waits for the host to exit and returns its
// resource usage.
func (h *host) stop() (usage, error) {
	defer os.RemoveAll(h.dir)
	h.ext.Close()
	select {
	case err := <-h.done:
		if err != nil {
			return usage{}, fmt.Errorf("the host exited with %v; its log: %s", err, tail(h.stderr.String()))
		}
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-h.done
		return usage{}, errors.New("the host did not exit within 10 s of its input closing")
	}
	ps := h.cmd.ProcessState
	return usage{cpu: ps.UserTime() + ps.SystemTime(), switches: voluntarySwitches(ps)}, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return strings.TrimSpace(s)
}

// measureBaseline returns the usage of a host that starts, answers one
// bridge.health and exits. It takes the least of three runs.
func measureBaseline(ctx context.Context, bin string) (usage, error) {
	best := usage{cpu: -1, switches: -1}
	for range 3 {
		h, err := startHost(bin, agentprototest.Echo)
		if err != nil {
			return usage{}, err
		}
		c, err := h.dial(ctx)
		if err != nil {
			h.stop()
			return usage{}, err
		}
		c.Close()
		u, err := h.stop()
		if err != nil {
			return usage{}, err
		}
		if best.cpu < 0 || u.cpu < best.cpu {
			best.cpu = u.cpu
		}
		if best.switches < 0 || u.switches < best.switches {
			best.switches = u.switches
		}
	}
	return best, nil
}

func runScenario(ctx context.Context, bin string, sc Scenario) (*Result, error) {
	if sc.Agents <= 0 || sc.Requests <= 0 || sc.Duration <= 0 {
		return nil, errors.New("a scenario needs agents, a request bound and a duration")
	}
	handler := agentprototest.Echo
	var payload any // none for a large result
	typ := agentproto.TypeText
	if sc.ResultSize > 0 {
		result := ScreenshotResult(sc.ResultSize)
		handler = agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
			return result, nil
		})
		typ = agentproto.TypeScreenshot
	} else {
		payload = Payload(sc.PayloadSize)
	}
	h, err := startHost(bin, handler)
	if err != nil {
		return nil, err
	}
	clients := make([]*agentproto.Client, 0, sc.Agents)
	closeClients := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	for range sc.Agents {
		c, err := h.dial(ctx)
		if err != nil {
			closeClients()
			h.stop()
			return nil, err
		}
		clients = append(clients, c)
	}

	var issued atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	deadline := time.Now().Add(sc.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			var res json.RawMessage
			for issued.Add(1) <= int64(sc.Requests) && time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := c.Call(ctx, typ, payload, &res); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	closeClients()
	used, stopErr := h.stop()
	if firstErr != nil {
		return nil, firstErr
	}
	if stopErr != nil {
		return nil, stopErr
	}
	p50, p99 := Percentile(lat, 50), Percentile(lat, 99)
	return &Result{Scenario: sc, Requests: len(lat), Elapsed: elapsed, P50: p50, P99: p99, HostCPU: used.cpu, HostSwitches: used.switches}, nil
}

// Percentile returns the p-th percentile (nearest rank) of d, which it
// sorts.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100 // ceil(len*p/100), 1-based
	return d[max(i, 1)-1]
}

// Payload returns a browser.type payload of about n bytes.
func Payload(n int) json.RawMessage {
	pad := max(n-len(`{"ref":"@e1","text":""}`), 0)
	return json.RawMessage(`{"ref":"@e1","text":"` + strings.Repeat("x", pad) + `"}`)
}

// ScreenshotResult returns a browser.screenshot result of about n bytes.
func ScreenshotResult(n int) json.RawMessage {
	return json.RawMessage(`{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,` + strings.Repeat("QUJD", n/4) + `"}`)
}

// WriteTable writes results as a Markdown table.
func WriteTable(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString("| scenario | requests | requests/s | p50 | p99 | host CPU per request | host voluntary switches per request |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		switches := "n/a"
		if v := r.SwitchesPerRequest(); v >= 0 {
			switches = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s |\n", r.Scenario.Name, r.Requests, r.PerSecond(),
			round(r.P50), round(r.P99), round(r.CPUPerRequest()), switches)
	}
	if len(results) > 0 {
		fmt.Fprintf(&b, "\nHost CPU is net of a start, hello, health and exit (%s).\n", round(results[0].Baseline))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// round shortens d to three significant digits or so.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 100*time.Microsecond:
		return d.Round(10 * time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	default:
		return d.Round(10 * time.Nanosecond)
	}
}
