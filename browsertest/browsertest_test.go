package browsertest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extension"
	ibt "github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/tbrecorder"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// relayChildEnv marks the test binary TestInProcessRelay starts as a
// host: if the kit's init did not take that start over, the child exits
// here rather than run the tests (and start itself again).
const relayChildEnv = "BROWSERTEST_RELAY_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(relayChildEnv) != "" {
		fmt.Fprintln(os.Stderr, "the kit's init did not relay")
		os.Exit(3)
	}
	goleak.VerifyTestMain(m)
}

func TestChromiumEnv(t *testing.T) {
	assert.Equal(t, ibt.ChromiumEnv, browsertest.ChromiumEnv, "the variable the engine reads")
}

func TestStartWithoutChromium(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(browsertest.ChromiumEnv, "")
	for _, tc := range []struct {
		name, ci    string
		fatal, skip string
	}{
		{"skips outside CI", "", "", "apt-get install chromium"},
		{"fails in CI", "true", "CI is set", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := tbrecorder.New(t)
			r.Run(func(tb testing.TB) { browsertest.Start(tb, nil) })
			if tc.fatal == "" {
				assert.Empty(t, r.FatalMsg)
			} else {
				assert.Contains(t, r.FatalMsg, tc.fatal)
			}
			if tc.skip == "" {
				assert.Empty(t, r.SkipMsg)
			} else {
				assert.Contains(t, r.SkipMsg, tc.skip)
			}
			assert.Zero(t, r.Cleanups(), "nothing was started")
		})
	}
}

// fakeChromium is a stand-in browser that exits at once, for what the
// kit does before and around Chromium.
func fakeChromium(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell-script stand-ins need a Unix system")
	}
	path := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	return path
}

func TestAcceptNativeNeedsThePort(t *testing.T) {
	stand := fakeChromium(t)
	for name, opts := range map[string]*browsertest.Options{
		"own host":   {Chromium: stand, Host: stand},
		"native off": {Chromium: stand, Extension: &extension.Options{DisableNative: true}},
	} {
		t.Run(name, func(t *testing.T) {
			b := browsertest.Start(t, opts)
			_, err := b.AcceptNative(t.Context())
			assert.ErrorIs(t, err, browsertest.ErrNoNativePort)
		})
	}
}

func TestStartRefusesBadExtensionOptions(t *testing.T) {
	r := tbrecorder.New(t)
	r.Run(func(tb testing.TB) {
		browsertest.Start(tb, &browsertest.Options{Chromium: fakeChromium(t), Extension: &extension.Options{HubPort: 52789}})
	})
	r.RunCleanups()
	assert.Contains(t, r.FatalMsg, "HubToken is required")
}

func TestBuildHostFails(t *testing.T) {
	r := tbrecorder.New(t)
	r.Run(func(tb testing.TB) {
		browsertest.BuildHost(tb, "github.com/agentbridge/agentbridge/browsertest/nonexistent")
	})
	assert.Contains(t, r.FatalMsg, "nonexistent")
}

// TestInProcessRelay starts the test binary the way Chromium starts an
// in-process host: the kit's init relays its standard streams to the
// socket and exits before any test runs. Started without the extension's
// origin, it runs its tests as usual.
func TestInProcessRelay(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix sockets")
	}
	relay, err := ibt.ListenRelay()
	require.NoError(t, err)
	defer relay.Close()
	exe, err := os.Executable()
	require.NoError(t, err)

	var hello bytes.Buffer
	require.NoError(t, nativemsg.NewWriter(&hello, nil).Encode(map[string]string{"kind": "bridge:hello"}))
	cmd := exec.Command(exe, extension.NativeOrigin)
	cmd.Env = append(os.Environ(), relay.Env(), relayChildEnv+"=1")
	stdin, err := cmd.StdinPipe() // open, as Chromium keeps the port
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		cancel() // a child that exits without connecting ends the Accept
	}()
	_, err = stdin.Write(hello.Bytes())
	require.NoError(t, err)
	defer stdin.Close()
	c, err := relay.Accept(ctx)
	require.NoError(t, err, "the child connected")
	defer c.Close()
	var got map[string]string
	require.NoError(t, c.Decode(&got))
	assert.Equal(t, "bridge:hello", got["kind"])
	require.NoError(t, c.Encode(map[string]string{"kind": "bridge:response"}))
	require.NoError(t, c.Close())
	require.NoError(t, <-exited)
	assert.Contains(t, out.String(), "bridge:response", "the frame went to standard output, and nothing else did")
	assert.NotContains(t, out.String(), "PASS", "no test ran")

	// Any other start is a test run.
	out.Reset()
	cmd = exec.Command(exe, "-test.run=^TestBuildHostFails$")
	cmd.Env = append(os.Environ(), relay.Env())
	cmd.Stdout = &out
	require.NoError(t, cmd.Run())
	assert.Contains(t, out.String(), "PASS")
}

func TestPageServer(t *testing.T) {
	s := browsertest.NewPageServer(t, map[string]string{"/": "<h1>home</h1>"})
	assert.True(t, strings.HasPrefix(s.URL, "http://127.0.0.1:"), "loopback only")
	get := func(path string) (*http.Response, string) {
		res, err := s.Client().Get(s.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}
	res, body := get("/")
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(body, "<h1>home</h1>"))
	assert.Contains(t, body, "sendBeacon", "the load beacon is appended")
	res, _ = get("/missing")
	assert.Equal(t, http.StatusNotFound, res.StatusCode)

	s.Handle(`/a"</script>`, "<p>a</p>")
	_, body = get(`/a%22%3C/script%3E`)
	assert.Equal(t, 1, strings.Count(body, "</script>"), "a path cannot end the beacon's script")

	loaded := func(path string) {
		res, err := s.Client().Post(s.URL+"/.browsertest/loaded?path="+path, "text/plain", nil)
		require.NoError(t, err)
		res.Body.Close()
	}
	loaded("/")
	loaded("/")
	loaded("/missing") // not a page: ignored
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitLoaded(ctx, "/"), "a load before the call counts")
	require.NoError(t, s.WaitLoaded(ctx, "/"), "two loads, two waits")

	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	assert.ErrorIs(t, s.WaitLoaded(short, "/"), context.Canceled, "each load is taken once")
	assert.ErrorIs(t, s.WaitLoaded(short, "/missing"), context.Canceled)

	done := make(chan error, 1)
	go func() { done <- s.WaitLoaded(ctx, "/") }()
	loaded("/")
	assert.NoError(t, <-done, "a waiter wakes at the load")
}

func TestExample(t *testing.T) {
	testAgentInChromium(t)
}

// TestLeavesNothing runs a host executable of the user's (the example
// host), then an in-process host, with TMPDIR pointed at a fresh folder:
// the extension reaches each, and once each test is over the hosts,
// Chromium and every folder are gone.
func TestLeavesNothing(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	host := browsertest.BuildHost(t, "github.com/agentbridge/agentbridge/examples/weboperator-host")
	tmp, err := os.MkdirTemp("", "t")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp)

	check := func(t *testing.T, pids []int) {
		if runtime.GOOS == "linux" {
			assert.Len(t, pids, 1, "Chromium started the host")
		}
		for _, p := range pids {
			assert.NoError(t, browsertest.WaitExit(t.Context(), p), "the host is gone")
		}
		left, err := os.ReadDir(tmp)
		require.NoError(t, err)
		for _, e := range left {
			t.Errorf("left in TMPDIR: %s", e.Name())
		}
	}

	var pids []int
	t.Run("host", func(t *testing.T) {
		socket, token := filepath.Join(tmp, "s"), "test-token"
		b := browsertest.Start(t, &browsertest.Options{
			Host: host,
			Env:  []string{agentproto.EnvToken + "=" + token, agentproto.EnvSocket + "=" + socket},
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c, err := browsertest.DialAgent(ctx, socket, token)
		require.NoError(t, err, "chromium output:\n%s", b.Output())
		defer c.Close()
		h, err := c.Health(ctx)
		require.NoError(t, err)
		assert.True(t, h.ExtensionOnline())
		pids = b.HostPids()
	})
	check(t, pids)

	pids = nil
	t.Run("in-process", func(t *testing.T) {
		b := browsertest.Start(t, &browsertest.Options{
			Extension: &extension.Options{NativeReconnectDelay: 100 * time.Millisecond},
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		// The port, and after it drops the next one the extension opens.
		for range 2 {
			port, err := b.AcceptNative(ctx)
			require.NoError(t, err, "chromium output:\n%s", b.Output())
			var hello map[string]any
			require.NoError(t, port.Decode(&hello))
			assert.Equal(t, "bridge:hello", hello["kind"])
			pids = b.HostPids()
			if runtime.GOOS == "linux" {
				assert.Equal(t, []int{port.Pid}, pids, "the relay is the host Chromium started")
			}
			require.NoError(t, port.Close())
			if port.Pid != 0 {
				require.NoError(t, browsertest.WaitExit(ctx, port.Pid), "the relay exits with its port")
			}
		}
		// A third port, left open: the browser's cleanup closes it.
		_, err := b.AcceptNative(ctx)
		require.NoError(t, err)
		pids = b.HostPids()
	})
	check(t, pids)
}

// TestHub points the extension at a hub of the test's in the protocol-2
// dialect, then moves it with SetExtension to a second hub, in the
// classic dialect, where it approves what it is asked.
func TestHub(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	const token = "a-hub-token-of-16+"
	startHub := func() (*extbridge.Hub, int) {
		hub, err := extbridge.NewHub(token, nil)
		require.NoError(t, err)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- hub.Serve(l) }()
		t.Cleanup(func() { hub.Close(); <-served })
		return hub, l.Addr().(*net.TCPAddr).Port
	}
	hub, port := startHub()
	opts := &extension.Options{
		DisableNative: true,
		HubPort:       port,
		HubToken:      token,
		HubProtocol:   2,
		HubBackoffMin: 100 * time.Millisecond,
		HubBackoffMax: 500 * time.Millisecond,
		Approvals:     extension.ApprovalApprove,
	}
	b := browsertest.Start(t, &browsertest.Options{Extension: opts})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, hub.WaitConnected(ctx), "chromium output:\n%s", b.Output())
	info, ok := hub.Extension()
	require.True(t, ok)
	assert.Equal(t, extbridge.Protocol2, info.ProtocolVersion)
	assert.Equal(t, extension.Origin, info.Origin)
	tabs, err := hub.Tabs(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, tabs)

	second, port2 := startHub()
	opts.HubPort, opts.HubProtocol = port2, 0
	require.NoError(t, b.SetExtension(opts))
	hub.Close() // the extension reconnects, to the new port
	require.NoError(t, second.WaitConnected(ctx))
	info, _ = second.Extension()
	assert.Equal(t, extbridge.ProtocolClassic, info.ProtocolVersion)
	d, err := second.RequestApproval(ctx, extbridge.ApprovalRequest{ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
	require.NoError(t, err)
	assert.Equal(t, extbridge.Approved, d)
}
