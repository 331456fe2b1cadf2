package extension_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestWriteTimingsAndPolicies: the options a test of a hub or a host
// needs reach config.json.
func TestWriteTimingsAndPolicies(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, extension.Write(dir, &extension.Options{
		HubPort:              52789,
		HubToken:             "tok",
		HubProtocol:          2,
		HubBackoffMin:        100 * time.Millisecond,
		HubBackoffMax:        time.Second,
		Approvals:            extension.ApprovalApprove,
		NativeReconnectDelay: 200 * time.Millisecond,
	}))
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	var cfg struct {
		Native struct {
			ReconnectMs int `json:"reconnectMs"`
		} `json:"native"`
		Hub struct {
			Protocol     int `json:"protocol"`
			BackoffMinMs int `json:"backoffMinMs"`
			BackoffMaxMs int `json:"backoffMaxMs"`
		} `json:"hub"`
		Approvals string `json:"approvals"`
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	assert.Equal(t, 200, cfg.Native.ReconnectMs)
	assert.Equal(t, 2, cfg.Hub.Protocol)
	assert.Equal(t, 100, cfg.Hub.BackoffMinMs)
	assert.Equal(t, 1000, cfg.Hub.BackoffMaxMs)
	assert.Equal(t, "approve", cfg.Approvals)
	assert.Equal(t, "reject", extension.ApprovalReject.String())
}

func TestWriteRefuses(t *testing.T) {
	for name, opts := range map[string]*extension.Options{
		"hub without a token": {HubPort: 52789},
		"not a port":          {HubPort: 70000, HubToken: "t"},
		"bad host name":       {NativeHost: "Com.Example/host"},
		"unknown approvals":   {Approvals: extension.Approval(7)},
		"backoff max < min":   {HubPort: 52789, HubToken: "t", HubBackoffMin: time.Second, HubBackoffMax: time.Millisecond},
		"negative delay":      {NativeReconnectDelay: -time.Second},
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
