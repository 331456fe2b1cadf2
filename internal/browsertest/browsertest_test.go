package browsertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/extension"
	"github.com/agentbridge/agentbridge/internal/tbrecorder"
	"github.com/agentbridge/agentbridge/nativemsg"
)

type testMain struct{ m *testing.M }

func (tm testMain) Run() int {
	code := tm.m.Run()
	if err := browsertest.RemoveBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testMain{m})
}

// fakeChromium puts an executable called name into a new folder and
// makes that folder the whole PATH.
func fakeChromium(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Setenv("PATH", dir)
	t.Setenv(browsertest.ChromiumEnv, "")
	return path
}

func TestFindChromium(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell-script stand-ins need a Unix system")
	}
	t.Run("on PATH", func(t *testing.T) {
		want := fakeChromium(t, "chromium-browser")
		got, err := browsertest.FindChromium("")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("env var wins over PATH", func(t *testing.T) {
		fakeChromium(t, "chromium")
		other := filepath.Join(t.TempDir(), "my-chromium")
		require.NoError(t, os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755))
		t.Setenv(browsertest.ChromiumEnv, other)
		got, err := browsertest.FindChromium("")
		require.NoError(t, err)
		assert.Equal(t, other, got)
	})
	t.Run("explicit path wins", func(t *testing.T) {
		want := fakeChromium(t, "google-chrome")
		t.Setenv(browsertest.ChromiumEnv, "/nonexistent/chromium")
		got, err := browsertest.FindChromium(want)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("branded Chrome on PATH is not picked", func(t *testing.T) {
		fakeChromium(t, "google-chrome") // PATH holds only it
		t.Setenv(browsertest.ChromiumEnv, "")
		_, err := browsertest.FindChromium("")
		require.ErrorIs(t, err, browsertest.ErrChromiumNotFound, "Chrome ignores --load-extension: the tests must skip, not fail")
	})
	t.Run("missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv(browsertest.ChromiumEnv, "")
		_, err := browsertest.FindChromium("")
		require.ErrorIs(t, err, browsertest.ErrChromiumNotFound)
		assert.Contains(t, err.Error(), "apt-get install chromium")
		_, err = browsertest.FindChromium("/nonexistent/chromium")
		assert.ErrorIs(t, err, browsertest.ErrChromiumNotFound)
	})
}

// SkipWithoutChromium's skip and its failure in CI are tested through
// the public kit's Start (browsertest.TestStartWithoutChromium).

func TestBuildBinary(t *testing.T) {
	first, err := browsertest.BuildBinary(t.Context(), browsertest.RelayHostPackage)
	require.NoError(t, err)
	info, err := os.Stat(first)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode().Perm()&0o100, "executable")
	again := browsertest.Build(t, browsertest.RelayHostPackage)
	assert.Equal(t, first, again, "built once per process")

	_, err = browsertest.BuildBinary(t.Context(), "github.com/agentbridge/agentbridge/internal/browsertest/nonexistent")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nonexistent")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = browsertest.BuildBinary(ctx, "github.com/agentbridge/agentbridge/nativemsg")
	assert.Error(t, err, "a cancelled build fails")
}

func TestLaunchErrors(t *testing.T) {
	t.Run("no Chromium", func(t *testing.T) {
		_, err := browsertest.Launch(t.Context(), &browsertest.Options{Chromium: "/nonexistent/chromium"})
		assert.ErrorIs(t, err, browsertest.ErrChromiumNotFound)
	})
	if runtime.GOOS == "windows" {
		return
	}
	stand := fakeChromium(t, "chromium")
	t.Run("bad extension config", func(t *testing.T) {
		dir := t.TempDir()
		_, err := browsertest.Launch(t.Context(), &browsertest.Options{
			Chromium: stand, Dir: dir, Extension: extension.Config{HubPort: 80},
		})
		assert.ErrorIs(t, err, extension.ErrInvalidConfig)
		entries, _ := os.ReadDir(dir)
		assert.Empty(t, entries, "what Launch made is removed on failure")
	})
	t.Run("missing host", func(t *testing.T) {
		_, err := browsertest.Launch(t.Context(), &browsertest.Options{Chromium: stand, HostPath: "/nonexistent/host"})
		require.Error(t, err)
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := browsertest.Launch(ctx, &browsertest.Options{Chromium: stand})
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// relayHost builds the relay host and listens for it.
func relayHost(t *testing.T) (host string, relay *browsertest.Relay) {
	t.Helper()
	browsertest.SkipWithoutChromium(t)
	host = browsertest.Build(t, browsertest.RelayHostPackage)
	relay, err := browsertest.ListenRelay()
	require.NoError(t, err)
	t.Cleanup(func() { relay.Close() })
	return host, relay
}

// acceptHello accepts the relay host Chromium started and reads the
// extension's hello.
func acceptHello(t *testing.T, relay *browsertest.Relay) *browsertest.RelayConn {
	t.Helper()
	conn, err := relay.Accept(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	var hello map[string]any
	require.NoError(t, conn.Decode(&hello))
	assert.Equal(t, "bridge:hello", hello["kind"])
	return conn
}

// TestCloseLeavesNothing starts Chromium with the relay host, so that a
// native host runs, and checks that Close ends every process by pid.
func TestCloseLeavesNothing(t *testing.T) {
	host, relay := relayHost(t)
	b, err := browsertest.Launch(t.Context(), &browsertest.Options{
		HostPath:  host,
		Env:       []string{relay.Env(), "BROWSERTEST_PROBE=inherited"},
		Extension: extension.Config{},
	})
	require.NoError(t, err)
	defer b.Close()

	// The host manifest sits in the profile, for this extension only.
	data, err := os.ReadFile(b.HostManifest)
	require.NoError(t, err)
	m, err := nativemsg.ParseManifest(data)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(b.ProfileDir, "NativeMessagingHosts", extension.NativeHostName+".json"), b.HostManifest)
	assert.Equal(t, []string{extension.NativeOrigin}, m.AllowedOrigins)
	assert.Equal(t, host, m.Path)

	conn := acceptHello(t, relay)

	// The host inherited Chromium's environment.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", conn.Pid))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(string(env), "\x00"), "BROWSERTEST_PROBE=inherited")

	assert.ErrorIs(t, b.StopExtensionWorker(t.Context()), browsertest.ErrNoDevTools)

	procs := b.Processes()
	assert.Contains(t, procs, b.Pid())
	assert.Contains(t, procs, conn.Pid, "the native host is tracked")
	assert.Greater(t, len(procs), 2, "renderers and helpers are tracked")
	assert.Equal(t, []int{conn.Pid}, b.HostPids())

	require.NoError(t, b.Close())
	for _, p := range append(procs, b.Pid(), conn.Pid) {
		assert.False(t, browsertest.ProcessAlive(p), "process %d survived Close", p)
	}
	assert.Empty(t, b.Processes())
	_, err = os.Stat(b.Dir)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the temporary folder is removed")
	select {
	case <-b.Exited():
	default:
		assert.Fail(t, "Exited is not closed after Close")
	}
	assert.NoError(t, b.Close(), "Close is idempotent")
}

// TestStopExtensionWorker stops the extension's service worker through
// the DevTools pipe: the native port it held closes, so the host reads
// EOF.
func TestStopExtensionWorker(t *testing.T) {
	host, relay := relayHost(t)
	b := browsertest.Start(t, &browsertest.Options{
		HostPath: host,
		Env:      []string{relay.Env()},
		DevTools: true,
	})
	conn := acceptHello(t, relay)

	require.NoError(t, b.StopExtensionWorker(t.Context()))
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	var frame map[string]any
	assert.ErrorIs(t, conn.Decode(&frame), io.EOF, "the worker's port closed with it")
	require.NoError(t, b.Close())
	err := b.StopExtensionWorker(t.Context())
	require.Error(t, err, "no pipe once closed")
	assert.Contains(t, err.Error(), "DevTools pipe closed")
}

// TestStartCleansUpAfterAFailedTest runs Start under a test that fails:
// its cleanup still stops Chromium, and logs Chromium's output.
func TestStartCleansUpAfterAFailedTest(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	r := tbrecorder.New(t)
	var b *browsertest.Browser
	dir := t.TempDir()
	r.Run(func(tb testing.TB) {
		b = browsertest.Start(tb, &browsertest.Options{
			Extension: extension.Config{DisableNative: true},
			Dir:       dir,
			KeepDir:   true,
		})
		tb.Errorf("this test fails")
	})
	require.NotNil(t, b)
	require.Equal(t, 1, r.Cleanups())
	pid := b.Pid()
	require.True(t, browsertest.ProcessAlive(pid))
	r.RunCleanups()
	assert.False(t, browsertest.ProcessAlive(pid))
	assert.Empty(t, b.Processes())
	require.NotEmpty(t, r.LogMsgs, "the failed test gets Chromium's output")
	assert.Contains(t, r.LogMsgs[0], "Chromium's output")
	assert.Equal(t, []string{"this test fails"}, r.ErrorMsgs, "and no error of the cleanup's own")
	_, err := os.Stat(filepath.Join(dir, "extension", "manifest.json"))
	assert.NoError(t, err, "KeepDir keeps the folder")
	cfg, err := os.ReadFile(filepath.Join(dir, "extension", extension.ConfigFile))
	require.NoError(t, err)
	var parsed map[string]any
	require.NoError(t, json.Unmarshal(cfg, &parsed))
	assert.Equal(t, false, parsed["native"].(map[string]any)["enabled"])
}

// TestLaunchLeavesNothingInTMPDIR: Chromium leaves folders of its own
// (org.chromium.Chromium.*, holding its singleton socket) in its TMPDIR
// when it is stopped, so it runs with a private one that Close removes:
// the caller's TMPDIR is as it was.
func TestLaunchLeavesNothingInTMPDIR(t *testing.T) {
	host, relay := relayHost(t) // built and listening before TMPDIR changes
	long := filepath.Join(t.TempDir(), strings.Repeat("long-folder-name/", 5))
	own := t.TempDir()
	tmp, err := os.MkdirTemp("", "t")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)

	for _, dir := range []string{
		"",   // a temporary folder of Launch's own, in TMPDIR
		long, // given, and too long for the socket's path under it
	} {
		b, err := browsertest.Launch(t.Context(), &browsertest.Options{HostPath: host, Env: []string{relay.Env()}, Dir: dir})
		require.NoError(t, err)
		acceptHello(t, relay) // up: its extension started the host
		assert.DirExists(t, b.TempDir)
		assert.LessOrEqual(t, len(filepath.Join(b.TempDir, "org.chromium.Chromium.XXXXXX", "SingletonSocket")), 103,
			"Chromium can bind its singleton socket there")
		if dir != "" {
			assert.NotContains(t, b.TempDir, dir, "a folder of its own in /tmp")
		}
		require.NoError(t, b.Close())
		assert.NoDirExists(t, b.TempDir)
		left, err := os.ReadDir(tmp)
		require.NoError(t, err)
		for _, e := range left {
			t.Errorf("left in TMPDIR: %s", e.Name())
		}
	}

	// A TMPDIR the caller gives is Chromium's, and stays.
	b, err := browsertest.Launch(t.Context(), &browsertest.Options{HostPath: host, Env: []string{relay.Env(), "TMPDIR=" + own}})
	require.NoError(t, err)
	acceptHello(t, relay)
	assert.Equal(t, own, b.TempDir)
	require.NoError(t, b.Close())
	assert.DirExists(t, own)
}
