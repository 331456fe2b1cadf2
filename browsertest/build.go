package browsertest

import (
	"path"
	"path/filepath"
	"strings"
	"testing"

	ibt "github.com/agentbridge/agentbridge/internal/browsertest"
)

// BuildHost builds the Go main package pkg, your native host (an import
// path, or a path relative to the test's folder, as `go build` takes it),
// into the test's temporary folder with the go command on PATH, and
// returns the executable's path for [Options.Host]. The go command's build
// cache makes every build after the first quick. It fails the test when
// the build fails, quoting at most 4 KiB of the compiler's output.
func BuildHost(t testing.TB, pkg string) string {
	t.Helper()
	name := path.Base(strings.TrimSuffix(filepath.ToSlash(pkg), "/"))
	if name == "." || name == ".." || name == "/" {
		name = "host"
	}
	out := filepath.Join(t.TempDir(), name)
	if err := ibt.BuildTo(t.Context(), out, pkg); err != nil {
		t.Fatalf("%v", err)
	}
	return out
}
