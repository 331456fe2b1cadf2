package extension_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/extension"
	"github.com/agentbridge/agentbridge/internal/strictjson"
	"github.com/agentbridge/agentbridge/nativemsg"
)

func TestIDComesFromKey(t *testing.T) {
	id, err := nativemsg.ExtensionIDFromKey(extension.Key)
	require.NoError(t, err)
	assert.Equal(t, "lllgkhehhfideabmfhnlkocagdfegbhf", id)
	assert.Equal(t, extension.ID, id)
	assert.True(t, nativemsg.ValidExtensionID(extension.ID))
	assert.Equal(t, nativemsg.ExtensionOrigin(extension.ID), extension.NativeOrigin)
	assert.Equal(t, "chrome-extension://"+extension.ID, extension.Origin)
}

type manifest struct {
	ManifestVersion int    `json:"manifest_version"`
	Name            string `json:"name"`
	Description     string `json:"description"`
	Version         string `json:"version"`
	Key             string `json:"key"`
	MinimumChrome   string `json:"minimum_chrome_version"`
	Background      struct {
		ServiceWorker string `json:"service_worker"`
		Type          string `json:"type"`
	} `json:"background"`
	Permissions     []string `json:"permissions"`
	HostPermissions []string `json:"host_permissions"`
}

func TestManifest(t *testing.T) {
	data, err := fs.ReadFile(extension.Files(), "manifest.json")
	require.NoError(t, err)
	var m manifest
	require.NoError(t, strictjson.Unmarshal(data, &m), "the manifest has only known, unique keys")
	assert.Equal(t, 3, m.ManifestVersion)
	assert.Equal(t, extension.Key, m.Key)
	assert.Equal(t, extension.Version, m.Version)
	assert.Equal(t, "module", m.Background.Type)
	_, err = fs.Stat(extension.Files(), m.Background.ServiceWorker)
	assert.NoError(t, err, "the service worker file exists")
	// Exactly the permissions the extension uses (doc.go says why each).
	assert.ElementsMatch(t, []string{"nativeMessaging", "tabs", "scripting", "alarms"}, m.Permissions)
	assert.Equal(t, []string{"<all_urls>"}, m.HostPermissions)
}

// TestModulesResolve checks, without a JavaScript toolchain, that every
// module a file imports exists and exports the names imported from it.
func TestModulesResolve(t *testing.T) {
	importRe := regexp.MustCompile(`(?m)^import \{([^}]*)\} from '\./([^']+)';`)
	exportRe := regexp.MustCompile(`(?m)^export (?:async )?(?:function|class|const|let) (\w+)`)
	files := extension.Files()
	exports := map[string][]string{}
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".js" {
			return err
		}
		data, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		for _, m := range exportRe.FindAllSubmatch(data, -1) {
			exports[path] = append(exports[path], string(m[1]))
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, exports)
	for path := range exports {
		data, err := fs.ReadFile(files, path)
		require.NoError(t, err)
		for _, m := range importRe.FindAllSubmatch(data, -1) {
			module := string(m[2])
			require.Contains(t, exports, module, "%s imports %s", path, module)
			for _, name := range regexp.MustCompile(`\w+`).FindAllString(string(m[1]), -1) {
				assert.True(t, slices.Contains(exports[module], name), "%s imports %s from %s, which does not export it", path, name, module)
			}
		}
	}
}

func readConfig(t testing.TB, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, extension.ConfigFile))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(data, &cfg))
	return cfg
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ext")
	require.NoError(t, extension.Write(dir, extension.Config{}))

	want, err := fs.Glob(extension.Files(), "*")
	require.NoError(t, err)
	for _, name := range want {
		written, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		embedded, err := fs.ReadFile(extension.Files(), name)
		require.NoError(t, err)
		assert.Equal(t, embedded, written, name)
	}
	info, err := os.Stat(filepath.Join(dir, extension.ConfigFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the config may hold a token")

	assert.Equal(t, map[string]any{
		"native":    map[string]any{"enabled": true, "host": "com.weboperator.bridge", "reconnectMs": 5000.0},
		"hub":       nil,
		"approvals": "ignore",
		"wakeMs":    30000.0,
		"log":       false,
	}, readConfig(t, dir), "the zero Config: native side on with the reference timing, hub side off")

	// Writing again over an existing extension works and replaces its
	// configuration.
	require.NoError(t, extension.Write(dir, extension.Config{HubPort: 52789, HubToken: "tok"}))
	assert.Equal(t, map[string]any{
		"url": "ws://127.0.0.1:52789/ws", "token": "tok",
		"backoffMinMs": 1000.0, "backoffMaxMs": 30000.0, "pingMs": 20000.0,
	}, readConfig(t, dir)["hub"], "the spec's defaults: 1 s doubling to 30 s, ping every 20 s")
}

func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, extension.Write(dir, extension.Config{}))
	require.NoError(t, extension.WriteConfig(dir, extension.Config{
		HubPort:              4000,
		HubToken:             "secret",
		HubBackoffMin:        250 * time.Millisecond,
		HubBackoffMax:        2 * time.Second,
		HubPingInterval:      time.Microsecond, // rounds up to 1 ms
		Approvals:            extension.ApprovalReject,
		DisableNative:        true,
		NativeHost:           "org.example.host",
		NativeReconnectDelay: 100 * time.Millisecond,
		WakeInterval:         2 * time.Second,
		Log:                  true,
	}))
	assert.Equal(t, map[string]any{
		"native": map[string]any{"enabled": false, "host": "org.example.host", "reconnectMs": 100.0},
		"hub": map[string]any{
			"url": "ws://127.0.0.1:4000/ws", "token": "secret",
			"backoffMinMs": 250.0, "backoffMaxMs": 2000.0, "pingMs": 1.0,
		},
		"approvals": "reject",
		"wakeMs":    2000.0,
		"log":       true,
	}, readConfig(t, dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp", "no temporary file is left behind")
	}
}

func TestConfigRejected(t *testing.T) {
	for name, cfg := range map[string]extension.Config{
		"port below range":    {HubPort: -1, HubToken: "tok-SECRET"},
		"port above range":    {HubPort: 70000, HubToken: "tok-SECRET"},
		"port without token":  {HubPort: 5000},
		"negative backoff":    {HubPort: 5000, HubToken: "tok-SECRET", HubBackoffMin: -time.Second},
		"max below min":       {HubPort: 5000, HubToken: "tok-SECRET", HubBackoffMin: 5 * time.Second, HubBackoffMax: time.Second},
		"negative ping":       {HubPort: 5000, HubToken: "tok-SECRET", HubPingInterval: -1},
		"negative reconnect":  {NativeReconnectDelay: -1},
		"negative wake":       {WakeInterval: -time.Second},
		"bad host name":       {NativeHost: "Com.Example"},
		"host name with dots": {NativeHost: "com..example"},
		"unknown approval":    {Approvals: extension.Approval(7)},
		"negative protocol":   {HubPort: 5000, HubToken: "tok-SECRET", HubProtocol: -1},
		"protocol-2 panel without project dir": {HubPort: 5000, HubToken: "tok-SECRET", HubProtocol: 2,
			Panel: &extension.Panel{Message: "hi"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ext")
			err := extension.Write(dir, cfg)
			require.ErrorIs(t, err, extension.ErrInvalidConfig)
			assert.NotContains(t, err.Error(), "SECRET", "no token in errors")
			_, statErr := os.Stat(dir)
			assert.ErrorIs(t, statErr, fs.ErrNotExist, "nothing is written for a bad config")
			assert.ErrorIs(t, extension.WriteConfig(t.TempDir(), cfg), extension.ErrInvalidConfig)
		})
	}
}

func TestApprovalString(t *testing.T) {
	assert.Equal(t, "ignore", extension.ApprovalIgnore.String())
	assert.Equal(t, "approve", extension.ApprovalApprove.String())
	assert.Equal(t, "reject", extension.ApprovalReject.String())
	assert.Equal(t, "Approval(9)", extension.Approval(9).String())
}

func TestHubURL(t *testing.T) {
	assert.Equal(t, "ws://127.0.0.1:52789/ws", extension.HubURL(52789))
}
