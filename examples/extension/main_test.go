package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extension"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// runCmd runs the command with args and environment env.
func runCmd(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

// line returns the first submatch of re in out.
func line(t *testing.T, out, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	require.Len(t, m, 2, "%s not in:\n%s", re, out)
	return m[1]
}

// config is what the tests read of the folder's config.json.
type config struct {
	Native struct{ Enabled bool }
	Hub    struct{ URL, Token string }
}

func readConfig(t *testing.T, dir string) config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var cfg config
	require.NoError(t, json.Unmarshal(data, &cfg))
	return cfg
}

func TestWritesTheExtensionAndSaysHowToLoadIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ext")
	code, out, errOut := runCmd(t, map[string]string{TokenEnv: "hub-token"}, "-out", dir, "-hub", "127.0.0.1:52789")
	require.Equal(t, 0, code, errOut)

	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var manifest struct{ Key string }
	require.NoError(t, json.Unmarshal(data, &manifest))
	id, err := nativemsg.ExtensionIDFromKey(manifest.Key)
	require.NoError(t, err)
	assert.Equal(t, id, line(t, out, `(?m)^extension id: (\S+)$`), "the printed id is the one the manifest's key gives")

	assert.Equal(t, "chrome-extension://"+id+"/", line(t, out, `must allow (\S+);`))
	assert.Equal(t, "com.weboperator.bridge", line(t, out, `starts the host (\S+),`))
	assert.Equal(t, id, line(t, out, `(?m)^  weboperator-host install --browser chromium --extension-id (\S+) --user-data-dir `))
	assert.Equal(t, "ws://127.0.0.1:52789/ws", line(t, out, `dials (\S+) with the token`))
	assert.Equal(t, dir, line(t, out, `(?m)^  chromium --user-data-dir=\S+ --load-extension=(\S+)$`))
	assert.Equal(t, dir, line(t, out, `(?m)Load unpacked and choose (\S+)$`))
	assert.Contains(t, out, "a browser profile made for tests")

	cfg := readConfig(t, dir)
	assert.True(t, cfg.Native.Enabled)
	assert.Equal(t, "ws://127.0.0.1:52789/ws", cfg.Hub.URL)
	assert.Equal(t, "hub-token", cfg.Hub.Token)
	assert.NotContains(t, out, "hub-token", "the token is not printed")

	// Written again over its own output, with -hub-token over the
	// environment's and the native side off.
	code, out, errOut = runCmd(t, map[string]string{TokenEnv: "env"}, "-out", dir, "-hub", "localhost:1234", "-hub-token", "flag", "-no-native")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "native messaging: off")
	assert.NotContains(t, out, "weboperator-host install")
	cfg = readConfig(t, dir)
	assert.False(t, cfg.Native.Enabled)
	assert.Equal(t, "ws://127.0.0.1:1234/ws", cfg.Hub.URL)
	assert.Equal(t, "flag", cfg.Hub.Token)
}

func TestRefuses(t *testing.T) {
	foreign := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o600))
	token := map[string]string{TokenEnv: "t"}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"no -out", token, nil, 2, "usage:"},
		{"a folder of other files", token, []string{"-out", foreign}, 1, "holds no extension written by this command"},
		{"a hub elsewhere", token, []string{"-out", t.TempDir(), "-hub", "192.0.2.1:52789"}, 2, "dials 127.0.0.1 only"},
		{"not a port", token, []string{"-out", t.TempDir(), "-hub", "127.0.0.1:http"}, 2, "not a TCP port"},
		{"a hub without a token", nil, []string{"-out", t.TempDir(), "-hub", "127.0.0.1:52789"}, 2, "needs the hub's token"},
		{"a bad host name", nil, []string{"-out", t.TempDir(), "-native-host", "Bad/Name"}, 1, "invalid native host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.env, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, errOut, tc.stderr)
			assert.Empty(t, out)
		})
	}
	entries, err := os.ReadDir(foreign)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written into a folder of other files")
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, "/tmp/ext", shellQuote("/tmp/ext"))
	assert.Equal(t, "'/tmp/my ext'", shellQuote("/tmp/my ext"))
	assert.Equal(t, `'/tmp/it'\''s'`, shellQuote("/tmp/it's"))
}

// TestChromiumLoadsTheFolder follows the printed instructions: Chromium
// started with the printed flags loads the folder, and its service worker
// dials the hub the test runs, with the extension's origin.
func TestChromiumLoadsTheFolder(t *testing.T) {
	browsertest.SkipWithoutChromium(t)
	const token = "extension-test-token"
	hub, err := extbridge.NewHub(token, nil)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	defer func() { hub.Close(); <-served }()

	dir := filepath.Join(t.TempDir(), "ext")
	code, out, errOut := runCmd(t, map[string]string{TokenEnv: token}, "-out", dir, "-hub", l.Addr().String(), "-no-native")
	require.Equal(t, 0, code, errOut)
	flags := strings.Fields(line(t, out, `(?m)^  chromium (.+)$`))
	// The printed flags come after the harness's own and win: Chromium
	// loads the command's folder, not the harness's extension (whose hub
	// side is off, so the hub hears only from the command's).
	b := browsertest.Start(t, &browsertest.Options{
		Extension: &extension.Options{DisableNative: true},
		Args:      append(flags, "--disable-extensions-except="+dir),
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, hub.WaitConnected(ctx), "chromium output:\n%s", b.Output())
	info, ok := hub.Extension()
	require.True(t, ok)
	assert.Equal(t, extension.Origin, info.Origin)
	assert.Equal(t, extension.Version, info.Version)
}
