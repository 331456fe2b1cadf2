//go:build windows

package nativemsg

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// testHostPath is an absolute host path on this system, with spaces.
const testHostPath = `C:\Program Files\WebOperator Host\weboperator-host.exe`

// testHostName returns a host name no real host uses, so that the tests
// never touch a real registration.
func testHostName(*testing.T) string {
	return fmt.Sprintf("com.agentbridge.test_%x", rand.Text()[:8])
}

// readDefault returns the default value of key under HKCU or HKLM, or
// registry.ErrNotExist.
func readDefault(t *testing.T, loc *Location) (string, error) {
	t.Helper()
	root, path, err := openHive(loc)
	require.NoError(t, err)
	k, err := registry.OpenKey(root, path, registry.QUERY_VALUE)
	if err != nil {
		return "", err
	}
	defer k.Close()
	v, _, err := k.GetStringValue("")
	return v, err
}

func writeDefault(t *testing.T, loc *Location, value string) {
	t.Helper()
	root, path, err := openHive(loc)
	require.NoError(t, err)
	k, _, err := registry.CreateKey(root, path, registry.SET_VALUE)
	require.NoError(t, err)
	defer k.Close()
	require.NoError(t, k.SetStringValue("", value))
}

func deleteKey(t *testing.T, loc *Location) {
	root, path, err := openHive(loc)
	if err == nil {
		registry.DeleteKey(root, path)
	}
}

func manifestFor(b Browser, name string) *HostManifest {
	m := validManifest()
	m.Name = name
	if b.Family() == FamilyFirefox {
		m.AllowedOrigins = nil
		m.AllowedExtensions = []string{"bridge@weboperator.example"}
	}
	return m
}

// TestInstallWindowsRegistry installs and uninstalls for every browser:
// the manifest file is written, the browser's key under HKCU points at it,
// and Uninstall removes both.
func TestInstallWindowsRegistry(t *testing.T) {
	wantKeys := map[Browser]string{
		Chrome:   `HKCU\Software\Google\Chrome\NativeMessagingHosts\`,
		Chromium: `HKCU\Software\Chromium\NativeMessagingHosts\`,
		Edge:     `HKCU\Software\Microsoft\Edge\NativeMessagingHosts\`,
		Brave:    `HKCU\Software\BraveSoftware\Brave-Browser\NativeMessagingHosts\`,
		Firefox:  `HKCU\Software\Mozilla\NativeMessagingHosts\`,
	}
	for _, b := range Browsers() {
		t.Run(string(b), func(t *testing.T) {
			name := testHostName(t)
			dir := filepath.Join(tempDir(t), "Host Manifests") // a space, as under Program Files
			loc, err := ManifestLocation(b, UserScope, name, &LocationOptions{WindowsDir: dir})
			require.NoError(t, err)
			assert.Equal(t, wantKeys[b]+name, loc.RegistryKey)
			t.Cleanup(func() { deleteKey(t, loc) })

			m := manifestFor(b, name)
			require.NoError(t, Install(m, loc, nil))
			data, err := os.ReadFile(loc.ManifestPath)
			require.NoError(t, err)
			got, err := ParseManifest(data)
			require.NoError(t, err)
			assert.Equal(t, testHostPath, got.Path, "the absolute path of the .exe, spaces and all")
			v, err := readDefault(t, loc)
			require.NoError(t, err)
			assert.Equal(t, loc.ManifestPath, v)

			require.NoError(t, Install(m, loc, nil), "reinstalling over our own key is fine")

			require.NoError(t, Uninstall(loc, nil))
			assert.NoFileExists(t, loc.ManifestPath)
			_, err = readDefault(t, loc)
			assert.ErrorIs(t, err, registry.ErrNotExist)
			require.NoError(t, Uninstall(loc, nil), "uninstalling twice is fine")
		})
	}
}

// TestInstallWindowsRegistryConflict checks that a key pointing at another
// manifest is reported and left alone, unless Force.
func TestInstallWindowsRegistryConflict(t *testing.T) {
	name := testHostName(t)
	loc, err := ManifestLocation(Chrome, UserScope, name, &LocationOptions{WindowsDir: tempDir(t)})
	require.NoError(t, err)
	t.Cleanup(func() { deleteKey(t, loc) })
	const other = `C:\Other Vendor\host.json`
	writeDefault(t, loc, other)

	err = Install(manifestFor(Chrome, name), loc, nil)
	var ce *RegistryConflictError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrRegistryConflict)
	assert.Equal(t, other, ce.Existing)
	assert.NoFileExists(t, loc.ManifestPath, "nothing is written")
	v, err := readDefault(t, loc)
	require.NoError(t, err)
	assert.Equal(t, other, v, "another host's key is never overwritten")

	err = Uninstall(loc, nil)
	assert.ErrorIs(t, err, ErrRegistryConflict)
	v, err = readDefault(t, loc)
	require.NoError(t, err)
	assert.Equal(t, other, v, "another host's key is never deleted")

	require.NoError(t, Install(manifestFor(Chrome, name), loc, &InstallOptions{Force: true}))
	v, err = readDefault(t, loc)
	require.NoError(t, err)
	assert.Equal(t, loc.ManifestPath, v)

	writeDefault(t, loc, other)
	require.NoError(t, Uninstall(loc, &InstallOptions{Force: true}))
	_, err = readDefault(t, loc)
	assert.ErrorIs(t, err, registry.ErrNotExist)
}

// TestInstallWindowsSystemScope writes under HKLM, which needs an
// administrator; elsewhere the error says so and nothing is left behind.
func TestInstallWindowsSystemScope(t *testing.T) {
	name := testHostName(t)
	loc, err := ManifestLocation(Edge, SystemScope, name, &LocationOptions{WindowsDir: tempDir(t)})
	require.NoError(t, err)
	assert.Equal(t, `HKLM\Software\Microsoft\Edge\NativeMessagingHosts\`+name, loc.RegistryKey)
	t.Cleanup(func() { deleteKey(t, loc) })
	err = Install(manifestFor(Edge, name), loc, nil)
	if errors.Is(err, syscall.ERROR_ACCESS_DENIED) {
		t.Skip("HKLM is not writable: not an administrator")
	}
	require.NoError(t, err)
	v, err := readDefault(t, loc)
	require.NoError(t, err)
	assert.Equal(t, loc.ManifestPath, v)
	require.NoError(t, Uninstall(loc, nil))
	_, err = readDefault(t, loc)
	assert.ErrorIs(t, err, registry.ErrNotExist)
}

// TestChromeStartsHostThroughCmd starts a host whose path has spaces the
// way Chrome does on Windows: through cmd.exe /d /c with the quoted path,
// the origin and --parent-window. The host must get its launch arguments
// whole and answer on standard output with frames only.
func TestChromeStartsHostThroughCmd(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	dir := filepath.Join(tempDir(t), "Program Files", "Web Operator")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	host := filepath.Join(dir, "weboperator host.exe")
	copyFile(t, self, host)

	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = `C:\Windows\System32\cmd.exe`
	}
	const origin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"
	cmd := exec.CommandContext(t.Context(), comspec)
	// Chrome's command line: cmd /d /c ""<host>" <origin> --parent-window=N"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CmdLine: fmt.Sprintf(`%s /d /c ""%s" %s --parent-window=0"`, syscall.EscapeArg(comspec), host, origin),
	}
	cmd.Env = append(os.Environ(), "NATIVEMSG_TEST_HOST=launch")
	cmd.Stdin = bytes.NewReader(frame(`{"kind":"ping"}`))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	r := NewReader(&stdout, nil)
	var got struct {
		Args []string    `json:"args"`
		Info *LaunchInfo `json:"info"`
		Kind string      `json:"kind"`
	}
	require.NoError(t, r.Decode(&got), "stdout holds frames only; stderr: %s", stderr.String())
	assert.Equal(t, []string{origin, "--parent-window=0"}, got.Args)
	require.NotNil(t, got.Info)
	assert.Equal(t, "abcdefghijklmnopabcdefghijklmnop", got.Info.ExtensionID)
	assert.Equal(t, "ping", got.Kind)
	_, err = r.ReadMessage(nil)
	assert.ErrorIs(t, err, io.EOF, "nothing but the one frame")
	assert.Contains(t, stderr.String(), "stray print from a library")
	assert.Contains(t, stderr.String(), "stray bytes on the standard output handle")
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o755))
}

// runLaunchHost is the host TestChromeStartsHostThroughCmd starts: it
// prints carelessly, reads one frame and answers with its launch
// arguments.
func runLaunchHost() {
	conn, err := OpenStdio(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenStdio:", err)
		os.Exit(3)
	}
	fmt.Println("stray print from a library")
	// What code below the os package writes to the standard output handle.
	if h, err := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE); err == nil {
		msg := []byte("stray bytes on the standard output handle\n")
		var n uint32
		windows.WriteFile(h, msg, &n, nil)
	}
	var msg map[string]any
	if err := conn.Decode(&msg); err != nil {
		fmt.Fprintln(os.Stderr, "Decode:", err)
		os.Exit(5)
	}
	info, _ := ParseLaunchArgs(os.Args[1:])
	out, _ := json.Marshal(map[string]any{"args": os.Args[1:], "info": info, "kind": msg["kind"]})
	if err := conn.WriteMessage(out); err != nil {
		os.Exit(6)
	}
	conn.Close()
}

// TestValidateWindowsPaths checks that a manifest path must be absolute
// as Windows means it: a drive and a root, or a UNC share.
func TestValidateWindowsPaths(t *testing.T) {
	for _, p := range []string{`\Program Files\host.exe`, `C:host.exe`, `host.exe`, `..\host.exe`} {
		m := validManifest()
		m.Path = p
		assert.Error(t, m.Validate(), "%q is not absolute", p)
	}
	for _, p := range []string{`C:\Program Files\Host\host.exe`, `\\server\share\host.exe`} {
		m := validManifest()
		m.Path = p
		assert.NoError(t, m.Validate(), "%q is absolute", p)
	}
}
