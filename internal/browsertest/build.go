package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// builds caches BuildBinary's results for the life of the process.
var builds struct {
	mu   sync.Mutex
	dir  string
	seq  int
	done map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// maxBuildOutput bounds the compiler output quoted in a build error.
const maxBuildOutput = 4 << 10

// BuildBinary builds the Go main package pkg (an import path, or a path
// relative to the working directory, as `go build` takes it) into a
// temporary folder and returns the executable's path. Each package is
// built once per process; later calls return the same path. RemoveBuilds
// deletes the folder. Concurrent calls are safe; ctx bounds the build.
func BuildBinary(ctx context.Context, pkg string) (string, error) {
	if pkg == "" {
		return "", fmt.Errorf("browsertest: no package to build")
	}
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = make(map[string]*build)
	}
	b := builds.done[pkg]
	if b == nil {
		b = &build{}
		builds.done[pkg] = b
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "browsertest-bin-*")
		if err != nil {
			builds.mu.Unlock()
			return "", fmt.Errorf("browsertest: %w", err)
		}
		builds.dir = dir
	}
	dir := builds.dir
	builds.seq++
	n := builds.seq
	builds.mu.Unlock()

	b.once.Do(func() {
		name := fmt.Sprintf("%s-%d", path.Base(strings.TrimSuffix(filepath.ToSlash(pkg), "/")), n)
		b.path = filepath.Join(dir, name)
		if b.err = BuildTo(ctx, b.path, pkg); b.err != nil {
			b.path = ""
		}
	})
	if b.err != nil {
		// A failed (or cancelled) build is not cached.
		builds.mu.Lock()
		if builds.done[pkg] == b {
			delete(builds.done, pkg)
		}
		builds.mu.Unlock()
	}
	return b.path, b.err
}

// BuildTo builds the Go main package pkg (as `go build` takes it) into
// the executable out, with the go command on PATH. A failed build's error
// quotes at most 4 KiB of the compiler's output. ctx bounds the build.
func BuildTo(ctx context.Context, out, pkg string) error {
	if pkg == "" {
		return fmt.Errorf("browsertest: no package to build")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("browsertest: building %s: the go command is not on PATH", pkg)
	}
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, pkg)
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		msg := output.Bytes()
		if len(msg) > maxBuildOutput {
			msg = msg[:maxBuildOutput]
		}
		return fmt.Errorf("browsertest: building %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// RemoveBuilds deletes the folder of BuildBinary's executables and forgets
// them. Call it once the process no longer needs them, for example in
// TestMain after m.Run.
func RemoveBuilds() error {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	dir := builds.dir
	builds.dir = ""
	builds.done = nil
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}
