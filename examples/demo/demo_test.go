package main

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/browsertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// assertNonBrowserSteps checks what the tour shows with Go alone.
func assertNonBrowserSteps(t *testing.T, s string) {
	t.Helper()
	assert.Contains(t, s, "17 00 00 00  = 23")
	assert.Contains(t, s, `browser → host through an in-memory pipe: {"kind":"bridge:hello"}`)
	assert.Contains(t, s, "frame of 1048577 bytes exceeds the limit of 1048576 bytes")
	assert.Contains(t, s, `"chrome-extension://lllgkhehhfideabmfhnlkocagdfegbhf/"`)
	assert.Contains(t, s, "the site asks for pacing: at least 120 ms between starts, 2 at once")
	// Pacing shows in the server-side start times of the batch.
	starts := regexp.MustCompile(`started at \+\s*(\d+) ms`).FindAllStringSubmatch(s, -1)
	require.Len(t, starts, 5)
	for i := 1; i < len(starts); i++ {
		prev, _ := strconv.Atoi(starts[i-1][1])
		cur, _ := strconv.Atoi(starts[i][1])
		assert.GreaterOrEqual(t, cur-prev, 120, "operation %d started %d ms after the previous one", i, cur-prev)
	}
	assert.Contains(t, s, "the cart holds 1 × Wireless Keyboard 75% (kbd-75), passed by $ref from findKeyboard")
	assert.Contains(t, s, `refused before any request: webagents: operation "add" runs write action "cart.add"`)
	for _, step := range []string{"native messaging frames", "native host manifest", "WebAgents: discovery",
		`WebAgents: batch with \$ref and pacing`, "WebAgents: write without consent"} {
		assert.Regexp(t, step+`\s+ok\s`, s)
	}
}

func TestRunWithGoAlone(t *testing.T) {
	// No Chromium anywhere: the browser steps are skipped with instructions
	// and the tour still succeeds.
	t.Setenv("PATH", t.TempDir())
	t.Setenv(browsertest.ChromiumEnv, "")
	var out bytes.Buffer
	err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out})
	require.NoError(t, err, "the tour's output:\n%s", out.String())
	s := out.String()
	assertNonBrowserSteps(t, s)
	assert.Contains(t, s, "skipped: Chromium not found")
	assert.Contains(t, s, "sudo apt-get install chromium")
	assert.Regexp(t, `Chromium with the reference extension\s+skipped`, s)
	assert.Regexp(t, `agent protocol in Chromium\s+skipped`, s)
	assert.NotContains(t, s, "FAILED")
}

func TestRunFailsForABadChromiumPath(t *testing.T) {
	var out bytes.Buffer
	err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, Chromium: filepath.Join(t.TempDir(), "no-such-browser"), NoBrowser: false})
	require.EqualError(t, err, "1 of 9 steps failed")
	assert.Regexp(t, `Chromium with the reference extension\s+FAILED`, out.String())

	// A path in $AGENTBRIDGE_CHROMIUM is as explicit as --chromium: it
	// fails rather than being skipped as "not installed".
	t.Setenv(browsertest.ChromiumEnv, filepath.Join(t.TempDir(), "no-such-browser"))
	out.Reset()
	err = Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out})
	require.EqualError(t, err, "1 of 9 steps failed")
	assert.Regexp(t, `Chromium with the reference extension\s+FAILED`, out.String())
	assert.NotContains(t, out.String(), "sudo apt-get install chromium")
}

func TestRunEverythingInChromium(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	shots := t.TempDir()
	// The run's temporary folder, the host's build and Chromium's own
	// folders all go in TMPDIR; nothing may be left there. (A short TMPDIR,
	// as /tmp is, so that Chromium's TMPDIR is inside the run's folder.)
	tmp, err := os.MkdirTemp("", "d")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	err = Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, ScreenshotDir: shots})
	require.NoError(t, err, "the tour's output:\n%s", out.String())
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	for _, e := range left {
		t.Errorf("left in the temporary folder: %s", e.Name())
	}
	m := regexp.MustCompile(`Chromium's TMPDIR: (\S+)`).FindStringSubmatch(out.String())
	require.Len(t, m, 2)
	assert.True(t, strings.HasPrefix(m[1], tmp+string(filepath.Separator)), "Chromium's TMPDIR %s is not in the run's folder", m[1])
	assert.NoDirExists(t, m[1])
	s := out.String()
	assertNonBrowserSteps(t, s)
	var data []byte
	for _, step := range []string{"Chromium with the reference extension", "agent protocol in Chromium", "extension bridge in Chromium"} {
		assert.Regexp(t, step+`\s+ok\s`, s)
	}
	assert.Regexp(t, `MCP server over the three protocols\s+ok\s+\S+\s+tools/list, catalog.search \(WebAgents\), hub_navigate \(hub\), browser_snapshot \(bridge\)`, s)
	assert.Contains(t, s, `shows`)
	assert.Contains(t, s, `read h1 → "Wireless Mouse"`)
	assert.Contains(t, s, "approval_request Bash → the panel answered approved")

	data, err = os.ReadFile(onlyFile(t, shots, "agentbridge-demo-agentproto-*.jpg"))
	require.NoError(t, err)
	_, err = jpeg.DecodeConfig(bytes.NewReader(data))
	assert.NoError(t, err)
	data, err = os.ReadFile(onlyFile(t, shots, "agentbridge-demo-extbridge-*.png"))
	require.NoError(t, err)
	_, err = png.DecodeConfig(bytes.NewReader(data))
	assert.NoError(t, err)

	// Nothing is left running: neither Chromium nor the host it started.
	for _, re := range []string{`Chromium started \(pid (\d+)\)`, `the Go host \(pid (\d+)\)`} {
		m := regexp.MustCompile(re).FindStringSubmatch(s)
		require.Len(t, m, 2, re)
		pid, _ := strconv.Atoi(m[1])
		assert.False(t, browsertest.ProcessAlive(pid), "pid %d still running", pid)
	}
}

// onlyFile returns the one file in dir matching pattern.
func onlyFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	require.Len(t, names, 1, pattern)
	return names[0]
}

// TestScreenshotsNeverOverwrite: a screenshot goes to a new file, never to
// one already there under a predictable name (in a shared folder, another
// user's file or link).
func TestScreenshotsNeverOverwrite(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "agentbridge-demo-agentproto.jpg")))
	r := &runner{opts: Options{PBKDF2Iterations: testPBKDF2Iterations, ScreenshotDir: dir}}
	path, err := r.saveScreenshot("agentbridge-demo-agentproto-*.jpg", []byte("image"))
	require.NoError(t, err)
	assert.Equal(t, dir, filepath.Dir(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "image", string(data))
	data, err = os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestSummaryFailsWhenAStepFails(t *testing.T) {
	var out bytes.Buffer
	err := printSummary(&out, []result{{name: "a", status: "ok"}, {name: "b", status: "FAILED", summary: "error: boom"}})
	require.EqualError(t, err, "1 of 2 steps failed")
	assert.Regexp(t, `b\s+FAILED\s+0s\s+error: boom`, out.String())
}

func TestPidList(t *testing.T) {
	assert.Equal(t, "pid unknown", pidList(nil))
	assert.Equal(t, "pid 17779", pidList([]int{17779}))
	assert.Equal(t, "pids 17779, 17781", pidList([]int{17779, 17781}))
}

// TestRunRefusesABadScreenshotsFolder: a --screenshots folder that is not
// there fails the run before any step, not after the browser steps.
func TestRunRefusesABadScreenshotsFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), file} {
		var out bytes.Buffer
		err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, ScreenshotDir: dir})
		assert.ErrorContains(t, err, "screenshots folder", dir)
		assert.Empty(t, out.String(), dir)
	}
}

// TestRunWithNoBrowser: --no-browser skips the browser steps even when
// Chromium is there, and the tour succeeds.
func TestRunWithNoBrowser(t *testing.T) {
	var out bytes.Buffer
	err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, NoBrowser: true})
	require.NoError(t, err, "the tour's output:\n%s", out.String())
	s := out.String()
	assertNonBrowserSteps(t, s)
	assert.Regexp(t, `Chromium with the reference extension\s+skipped\s+\S+\s+--no-browser given`, s)
	assert.NotContains(t, s, "Chromium started")
	assert.Regexp(t, `MCP server over the three protocols\s+ok\s+\S+\s+tools/list, catalog.search \(WebAgents\), hub_navigate \(hub\); bridge not called without Chromium`, s)
	assert.NotContains(t, s, "FAILED")
}

func TestCheckDisplay(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	none := env(nil)
	assert.NoError(t, checkDisplay(false, "linux", none), "headless needs no display")
	assert.ErrorContains(t, checkDisplay(true, "linux", none), "--headful needs a display")
	assert.ErrorContains(t, checkDisplay(true, "freebsd", none), "--headful needs a display")
	assert.NoError(t, checkDisplay(true, "linux", env(map[string]string{"DISPLAY": ":0"})))
	assert.NoError(t, checkDisplay(true, "linux", env(map[string]string{"WAYLAND_DISPLAY": "wayland-0"})))
	assert.NoError(t, checkDisplay(true, "darwin", none), "macOS has no DISPLAY")
}

// TestRunFailsFastWhenChromiumExits: a browser that exits at start fails
// the step at once with its own words, instead of after the 30 s wait for
// the native host.
func TestRunFailsFastWhenChromiumExits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the harness tracks Chromium's processes through /proc")
	}
	fake := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'Missing X server or $DISPLAY' >&2\nexit 1\n"), 0o755))
	var out bytes.Buffer
	err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, Chromium: fake})
	require.EqualError(t, err, "1 of 9 steps failed")
	assert.Contains(t, out.String(), "the native host never came online: the browser exited; Chromium's last output: Missing X server or $DISPLAY")
	assert.NotContains(t, out.String(), "deadline exceeded")
}

// TestRunHeadfulWithoutADisplay: --headful with no display fails the
// browser step with what to do, before starting anything.
func TestRunHeadfulWithoutADisplay(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only: Chromium there needs DISPLAY or WAYLAND_DISPLAY")
	}
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var out bytes.Buffer
	err := Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, Headful: true, Chromium: filepath.Join(t.TempDir(), "never-started")})
	require.EqualError(t, err, "1 of 9 steps failed")
	assert.Regexp(t, `FAILED: --headful needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set; run without --headful`, out.String())
	assert.NotContains(t, out.String(), "building examples/weboperator-host")
}

// testPBKDF2Iterations keeps the shop's sign-ups fast under -race; the
// demo itself runs at the shop's default cost.
const testPBKDF2Iterations = 1000
