package extension_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/extension"
	"github.com/agentbridge/agentbridge/nativemsg"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ext")
	require.NoError(t, extension.Write(dir, &extension.Options{HubPort: 52789, HubToken: "tok"}))

	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var manifest struct {
		Key     string `json:"key"`
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(data, &manifest))
	id, err := nativemsg.ExtensionIDFromKey(manifest.Key)
	require.NoError(t, err)
	assert.Equal(t, extension.ID, id, "the manifest's key gives ID")
	assert.Equal(t, extension.Version, manifest.Version)
	assert.Equal(t, "chrome-extension://"+extension.ID+"/", extension.NativeOrigin)
	assert.Equal(t, "chrome-extension://"+extension.ID, extension.Origin)

	var cfg struct {
		Native struct {
			Enabled bool   `json:"enabled"`
			Host    string `json:"host"`
		} `json:"native"`
		Hub struct {
			URL   string `json:"url"`
			Token string `json:"token"`
		} `json:"hub"`
	}
	path := filepath.Join(dir, "config.json")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cfg))
	assert.True(t, cfg.Native.Enabled)
	assert.Equal(t, agentproto.HostName, cfg.Native.Host, "the default host is the agent protocol's")
	assert.Equal(t, "ws://127.0.0.1:52789/ws", cfg.Hub.URL)
	assert.Equal(t, "tok", cfg.Hub.Token)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the token is the owner's only")

	require.NoError(t, extension.Write(dir, nil), "written again, with nil options")
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "tok", "the hub side is off")
}

func TestWriteRefuses(t *testing.T) {
	for name, opts := range map[string]*extension.Options{
		"hub without a token": {HubPort: 52789},
		"not a port":          {HubPort: 70000, HubToken: "t"},
		"bad host name":       {NativeHost: "Com.Example/host"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			assert.ErrorIs(t, extension.Write(dir, opts), extension.ErrInvalidOptions)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing written")
		})
	}
}
