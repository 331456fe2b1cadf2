package nativemsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	switch os.Getenv("NATIVEMSG_TEST_HOST") {
	case "1":
		runTestHost()
		return
	case "close":
		runClosingHost()
		return
	case "launch":
		runLaunchHost()
		return
	}
	goleak.VerifyTestMain(m)
}

// runTestHost is a tiny native host run in a child process: it prints to
// standard output the careless way, then echoes one frame.
func runTestHost() {
	conn, err := OpenStdio(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenStdio:", err)
		os.Exit(3)
	}
	fmt.Println("stray print from a library")
	os.Stdout.WriteString("more stray bytes\n")
	if _, err := OpenStdio(nil); err == nil {
		fmt.Fprintln(os.Stderr, "second OpenStdio succeeded")
		os.Exit(4)
	}
	var msg map[string]any
	if err := conn.Decode(&msg); err != nil {
		fmt.Fprintln(os.Stderr, "Decode:", err)
		os.Exit(5)
	}
	msg["echo"] = true
	if err := conn.Encode(msg); err != nil {
		os.Exit(6)
	}
	conn.Close()
}

// runClosingHost is a host run in a child process that reads a frame,
// acknowledges it, then blocks reading the next until SIGTERM, on which it
// closes its Conn: the blocked read must return.
func runClosingHost() {
	conn, err := OpenStdio(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "OpenStdio:", err)
		os.Exit(3)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		conn.Close()
	}()
	if _, err := conn.ReadMessage(nil); err != nil {
		fmt.Fprintln(os.Stderr, "first read:", err)
		os.Exit(4)
	}
	if err := conn.WriteMessage([]byte(`"reading"`)); err != nil {
		os.Exit(5)
	}
	_, err = conn.ReadMessage(nil) // blocks: the parent sends nothing more
	fmt.Fprintf(os.Stderr, "second read ended: closed=%v\n", errors.Is(err, os.ErrClosed))
}

// TestOpenStdioCloseInterruptsRead runs a host whose standard input stays
// open and silent, as a browser's does, and stops it with SIGTERM: its
// Conn.Close must end the read blocked on standard input. (Where Close
// cannot do that, the child never exits and the test times out.)
func TestOpenStdioCloseInterruptsRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux serves the standard streams through the poller")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATIVEMSG_TEST_HOST=close")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	_, err = stdin.Write(frame(`{"kind":"ping"}`))
	require.NoError(t, err)
	ack, err := NewReader(stdout, nil).ReadMessage(nil)
	require.NoError(t, err)
	assert.Equal(t, `"reading"`, string(ack))
	// The child is now in, or about to enter, its second read. Give it a
	// moment to block there; if it has not yet, the read still ends at
	// once on the closed Conn and the test proves less, but never fails
	// wrongly.
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	waited = true
	require.NoError(t, err, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "second read ended: closed=true")
}

func TestOpenStdioGuardsStdout(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATIVEMSG_TEST_HOST=1")
	cmd.Stdin = bytes.NewReader(frame(`{"kind":"ping"}`))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())

	assert.Equal(t, frame(`{"echo":true,"kind":"ping"}`), stdout.Bytes(), "stdout holds frames only")
	assert.Contains(t, stderr.String(), "stray print from a library")
	assert.Contains(t, stderr.String(), "more stray bytes")
}

func TestParseLaunchArgs(t *testing.T) {
	const id = "abcdefghijklmnopabcdefghijklmnop"
	ffManifest := filepath.Join(os.TempDir(), "native-messaging-hosts", "com.x.json") // absolute here
	tests := []struct {
		name string
		args []string
		want *LaunchInfo
	}{
		{"chromium", []string{"chrome-extension://" + id + "/"},
			&LaunchInfo{Family: FamilyChromium, Origin: "chrome-extension://" + id + "/", ExtensionID: id}},
		{"chromium on windows", []string{"chrome-extension://" + id + "/", "--parent-window=6620"},
			&LaunchInfo{Family: FamilyChromium, Origin: "chrome-extension://" + id + "/", ExtensionID: id, ParentWindow: 6620}},
		{"chromium with a future flag", []string{"chrome-extension://" + id + "/", "--something-new"},
			&LaunchInfo{Family: FamilyChromium, Origin: "chrome-extension://" + id + "/", ExtensionID: id}},
		{"firefox", []string{ffManifest, "addon@example.org"},
			&LaunchInfo{Family: FamilyFirefox, ManifestPath: ffManifest, ExtensionID: "addon@example.org"}},
		{"firefox uuid id", []string{ffManifest, "{12345678-1234-1234-1234-123456789abc}"},
			&LaunchInfo{Family: FamilyFirefox, ManifestPath: ffManifest, ExtensionID: "{12345678-1234-1234-1234-123456789abc}"}},
		{"no args", nil, nil},
		{"a subcommand", []string{"install", "--browser", "chromium"}, nil},
		{"id too short", []string{"chrome-extension://abc/"}, nil},
		{"id with q", []string{"chrome-extension://" + id[:31] + "q/"}, nil},
		{"no trailing slash", []string{"chrome-extension://" + id}, nil},
		{"path after origin", []string{"chrome-extension://" + id + "/x"}, nil},
		{"bad parent window", []string{"chrome-extension://" + id + "/", "--parent-window=x"}, nil},
		{"firefox relative manifest", []string{"com.x.json", "addon@example.org"}, nil},
		{"firefox wildcard id", []string{"/m/com.x.json", "*@example.org"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLaunchArgs(tc.args)
			if tc.want == nil {
				assert.ErrorIs(t, err, ErrNotLaunchedByBrowser)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExtensionIDFromKey(t *testing.T) {
	// Chromium 156 loaded an unpacked extension with this key under the id
	// pgnpnlnhjmjbmobnchmlaaonbieoelff (read from its profile's Preferences).
	key := "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAj4Mdrr7wUYZmq3VQJ4ltpT0+jyYuDAlA+PFWIiXmOoXJ7BuqN0u3MtB1lBvPhBNadaNTFQTnm7zyVymJyoeN+lx1F9Jq7p1KaMpYYJ25ZzYcflkXXa19eeaHnqsRy4+u/SJJ+pfE1CR0D3ndLuXBr5lwcW1x2RtQwp7mPdZPVPpcvkYP7ehJkHw7mlNH3C7fTO+bBD3CYavxuC5c8wyl+gJDsSRxFuH4OuNNJRUn1rzJRAy0G0HiZSSnrjhl4jKlJ0XuCMGOVo74n/DIx9vpbKbdSY2fwpbyw0CXPUaI68wCoU1iEt+kqXaIxqG/ZgJGvtbpGdtxvTMN6TaUhrK7dQIDAQAB"
	id, err := ExtensionIDFromKey(key)
	require.NoError(t, err)
	assert.Equal(t, "pgnpnlnhjmjbmobnchmlaaonbieoelff", id)
	// White space inside the key (as in wrapped PEM bodies) is ignored.
	id2, err := ExtensionIDFromKey(key[:40] + "\n  " + key[40:])
	require.NoError(t, err)
	assert.Equal(t, id, id2)

	_, err = ExtensionIDFromKey("not base64!")
	assert.Error(t, err)
	_, err = ExtensionIDFromKey("")
	assert.Error(t, err)
}

func validManifest() *HostManifest {
	return &HostManifest{
		Name:           "com.weboperator.bridge",
		Description:    "WebOperator bridge",
		Path:           testHostPath,
		Type:           "stdio",
		AllowedOrigins: []string{"chrome-extension://abcdefghijklmnopabcdefghijklmnop/"},
	}
}

func TestValidateManifest(t *testing.T) {
	require.NoError(t, validManifest().Validate())
	ff := validManifest()
	ff.AllowedOrigins, ff.AllowedExtensions = nil, []string{"bridge@weboperator.dev"}
	require.NoError(t, ff.Validate())

	tests := []struct {
		name   string
		mutate func(m *HostManifest)
		fields []string
	}{
		{"upper case name", func(m *HostManifest) { m.Name = "com.WebOperator.bridge" }, []string{"name"}},
		{"leading dot", func(m *HostManifest) { m.Name = ".com.x" }, []string{"name"}},
		{"double dot", func(m *HostManifest) { m.Name = "com..x" }, []string{"name"}},
		{"dash", func(m *HostManifest) { m.Name = "com.web-operator" }, []string{"name"}},
		{"no description", func(m *HostManifest) { m.Description = " " }, []string{"description"}},
		{"relative path", func(m *HostManifest) { m.Path = "bin/host" }, []string{"path"}},
		{"no path", func(m *HostManifest) { m.Path = "" }, []string{"path"}},
		{"wrong type", func(m *HostManifest) { m.Type = "socket" }, []string{"type"}},
		{"wildcard origin", func(m *HostManifest) { m.AllowedOrigins = []string{"chrome-extension://*/"} }, []string{"allowed_origins[0]"}},
		{"origin without slash", func(m *HostManifest) {
			m.AllowedOrigins = append(m.AllowedOrigins, "chrome-extension://abcdefghijklmnopabcdefghijklmnop")
		}, []string{"allowed_origins[1]"}},
		{"http origin", func(m *HostManifest) { m.AllowedOrigins = []string{"https://example.com/"} }, []string{"allowed_origins[0]"}},
		{"nobody allowed", func(m *HostManifest) { m.AllowedOrigins = nil }, []string{"allowed_origins"}},
		{"wildcard addon", func(m *HostManifest) { m.AllowedExtensions = []string{"*"} }, []string{"allowed_extensions[0]"}},
		{"everything wrong", func(m *HostManifest) { *m = HostManifest{} }, []string{"name", "description", "path", "type", "allowed_origins"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := validManifest()
			tc.mutate(m)
			err := m.Validate()
			require.Error(t, err)
			var fields []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var me *ManifestError
				require.ErrorAs(t, e, &me)
				fields = append(fields, me.Field)
			}
			assert.Equal(t, tc.fields, fields)
		})
	}
}

func TestParseManifestStrict(t *testing.T) {
	good, err := validManifest().MarshalIndent()
	require.NoError(t, err)
	m, err := ParseManifest(good)
	require.NoError(t, err)
	assert.Equal(t, validManifest(), m)

	_, err = ParseManifest([]byte(`{"name":"com.x","Name":"com.y","description":"d","path":"/x","type":"stdio","allowed_origins":["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]}`))
	assert.Error(t, err)
	_, err = ParseManifest([]byte(`{"name":"com.x","description":"d","PATH":"/x","type":"stdio","allowed_origins":["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]}`))
	assert.Error(t, err)
}

func TestManifestLocation(t *testing.T) {
	const name = "com.weboperator.bridge"
	home := "/home/ada"
	tests := []struct {
		goos    string
		b       Browser
		scope   Scope
		dir     string
		regKey  string
		udd     string
		wantErr bool
	}{
		{"linux", Chrome, UserScope, "/home/ada/.config/google-chrome/NativeMessagingHosts", "", "", false},
		{"linux", Chromium, UserScope, "/home/ada/.config/chromium/NativeMessagingHosts", "", "", false},
		{"linux", Edge, UserScope, "/home/ada/.config/microsoft-edge/NativeMessagingHosts", "", "", false},
		{"linux", Brave, UserScope, "/home/ada/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts", "", "", false},
		{"linux", Firefox, UserScope, "/home/ada/.mozilla/native-messaging-hosts", "", "", false},
		{"linux", Chrome, SystemScope, "/etc/opt/chrome/native-messaging-hosts", "", "", false},
		{"linux", Chromium, SystemScope, "/etc/chromium/native-messaging-hosts", "", "", false},
		{"darwin", Chrome, UserScope, "/home/ada/Library/Application Support/Google/Chrome/NativeMessagingHosts", "", "", false},
		{"darwin", Firefox, SystemScope, "/Library/Application Support/Mozilla/NativeMessagingHosts", "", "", false},
		{"darwin", Chrome, SystemScope, "/Library/Google/Chrome/NativeMessagingHosts", "", "", false},
		{"linux", Chromium, UserScope, "/tmp/prof/NativeMessagingHosts", "", "/tmp/prof", false},
		{"darwin", Brave, SystemScope, "/tmp/prof/NativeMessagingHosts", "", "/tmp/prof", false},
		{"linux", Firefox, UserScope, "", "", "/tmp/prof", true},
		{"linux", Chromium, UserScope, "", "", "relative/prof", true},
		{"windows", Chrome, UserScope, "C:/hosts", `HKCU\Software\Google\Chrome\NativeMessagingHosts\` + name, "", false},
		{"windows", Edge, SystemScope, "C:/hosts", `HKLM\Software\Microsoft\Edge\NativeMessagingHosts\` + name, "", false},
		{"windows", Firefox, UserScope, "C:/hosts", `HKCU\Software\Mozilla\NativeMessagingHosts\` + name, "", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s/%d/%s", tc.goos, tc.b, tc.scope, tc.udd), func(t *testing.T) {
			loc, err := ManifestLocation(tc.b, tc.scope, name, &LocationOptions{
				GOOS: tc.goos, HomeDir: home, UserDataDir: tc.udd, WindowsDir: "C:/hosts",
			})
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			// Another Unix system's paths keep their slashes on Windows.
			want := tc.dir
			if tc.goos == runtime.GOOS || tc.goos == "windows" {
				want = filepath.FromSlash(want)
			}
			assert.Equal(t, want, loc.Dir)
			assert.Equal(t, joinFor(tc.goos, loc.Dir, name+".json"), loc.ManifestPath)
			assert.Equal(t, tc.regKey, loc.RegistryKey)
		})
	}
	_, err := ManifestLocation("netscape", UserScope, name, nil)
	assert.Error(t, err)
	_, err = ManifestLocation(Chrome, UserScope, "Bad Name", nil)
	assert.Error(t, err)
	b, err := ParseBrowser("Chromium")
	require.NoError(t, err)
	assert.Equal(t, Chromium, b)
}

func TestInstallAndUninstall(t *testing.T) {
	profile := tempDir(t)
	loc, err := ManifestLocation(Chromium, UserScope, "com.weboperator.bridge", &LocationOptions{UserDataDir: profile})
	require.NoError(t, err)
	// A neighbour that Uninstall must leave alone.
	require.NoError(t, os.MkdirAll(loc.Dir, 0o755))
	neighbour := filepath.Join(loc.Dir, "com.other.host.json")
	require.NoError(t, os.WriteFile(neighbour, []byte("{}"), 0o644))

	m := validManifest()
	require.NoError(t, Install(m, loc, nil))
	data, err := os.ReadFile(loc.ManifestPath)
	require.NoError(t, err)
	got, err := ParseManifest(data)
	require.NoError(t, err)
	assert.Equal(t, m, got)
	st, err := os.Stat(loc.ManifestPath)
	require.NoError(t, err)
	if runtime.GOOS != "windows" { // Windows has ACLs, not modes
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	}

	// Reinstalling replaces the file; no temporary files are left behind.
	m.Description = "updated"
	require.NoError(t, Install(m, loc, nil))
	entries, err := os.ReadDir(loc.Dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"com.weboperator.bridge.json", "com.other.host.json"}, names)

	require.NoError(t, Uninstall(loc, nil))
	assert.NoFileExists(t, loc.ManifestPath)
	assert.FileExists(t, neighbour)
	assert.DirExists(t, loc.Dir)
	require.NoError(t, Uninstall(loc, nil), "uninstalling twice is fine")

	// Invalid manifests, wrong file names and wrong families are refused.
	bad := validManifest()
	bad.Path = "relative"
	assert.Error(t, Install(bad, loc, nil))
	other := validManifest()
	other.Name = "com.other.name"
	assert.Error(t, Install(other, loc, nil))
	ffLoc, err := ManifestLocation(Firefox, UserScope, "com.weboperator.bridge", &LocationOptions{HomeDir: tempDir(t)})
	require.NoError(t, err)
	assert.Error(t, Install(validManifest(), ffLoc, nil), "firefox needs allowed_extensions")
	assert.NoFileExists(t, loc.ManifestPath)
}

// tempDir is t.TempDir, removed file by file afterwards: os.RemoveAll on
// Windows deletes with POSIX semantics, which Wine 8 refuses ("Invalid
// function"), while plain deletes work there too.
func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "nativemsg")
	require.NoError(t, err)
	t.Cleanup(func() {
		var paths []string
		filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			paths = append(paths, p)
			return nil
		})
		for i := len(paths) - 1; i >= 0; i-- {
			os.Remove(paths[i])
		}
		_, err := os.Lstat(dir)
		assert.True(t, errors.Is(err, os.ErrNotExist), "temporary directory %s removed", dir)
	})
	return dir
}
