//go:build windows

package sockpath

import (
	"os"
	"path/filepath"
)

// Default is per user on Windows, which has no shared /tmp:
// %LOCALAPPDATA%\WebOperator\agent.sock, a folder only its user (and
// SYSTEM and administrators) can reach. Without LOCALAPPDATA it falls back
// to Unix, which then fails to listen with a clear error.
func Default() string {
	if dir, err := os.UserCacheDir(); err == nil { // %LOCALAPPDATA%
		return filepath.Join(dir, "WebOperator", "agent.sock")
	}
	return Unix
}
