//go:build !windows

package nativemsg

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testHostPath is an absolute host path on this system.
const testHostPath = "/usr/local/bin/weboperator-host"

// TestInstallWindowsReturnsRegistryKey checks that a Windows location
// used off Windows writes the manifest and says which registry value to
// set, since the registry is out of reach.
func TestInstallWindowsReturnsRegistryKey(t *testing.T) {
	dir := tempDir(t)
	loc, err := ManifestLocation(Chrome, UserScope, "com.weboperator.bridge", &LocationOptions{GOOS: "windows", WindowsDir: dir})
	require.NoError(t, err)
	err = Install(validManifest(), loc, nil)
	var re *RegistryError
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, ErrRegistryRequired)
	assert.Equal(t, `HKCU\Software\Google\Chrome\NativeMessagingHosts\com.weboperator.bridge`, re.Key)
	assert.Contains(t, err.Error(), loc.ManifestPath)
	assert.FileExists(t, loc.ManifestPath)

	err = Uninstall(loc, nil)
	require.ErrorAs(t, err, &re)
	assert.True(t, re.Remove)
	assert.NoFileExists(t, loc.ManifestPath)
}
