// Package npmtest installs the npm packages a test pins (a testdata folder
// with its package.json and package-lock.json) into a cache folder of the
// machine, once: the tests that check the SDK against real JavaScript peers
// (the AG-UI schemas, the MCP TypeScript SDK and conformance suite) share
// it.
package npmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Install copies the named files of src (package.json, package-lock.json
// and the scripts beside them) into the user's cache folder
// agentbridge/<name>-<hash of the lock file>, and unless an earlier call
// finished installing there, runs `npm ci` without install scripts, then
// each of steps as further npm arguments (for instance {"rebuild",
// "node"}), in that folder. It returns the folder. A new lock file gets a
// new folder; an install cut short is done again, since its marker is
// written last.
func Install(ctx context.Context, npm, src, name string, files []string, steps ...[]string) (string, error) {
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "agentbridge", name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err
		}
	}
	ready := filepath.Join(dir, "node_modules", ".agentbridge-installed")
	if _, err := os.Stat(ready); err == nil {
		return dir, nil
	}
	all := append([][]string{{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}}, steps...)
	for _, args := range all {
		cmd := exec.CommandContext(ctx, npm, append(args, "--loglevel=error")...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("npm %s in %s: %v: %.2000s", args[0], dir, err, out)
		}
	}
	return dir, os.WriteFile(ready, nil, 0o644)
}
