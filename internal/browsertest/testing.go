package browsertest

import (
	"os"
	"testing"
)

// SkipWithoutChromium returns the Chromium executable FindChromium("")
// finds. When there is none it skips the test with a message saying how
// to get one, or, when the environment variable CI is set, fails it: in CI
// the browser tests must run.
func SkipWithoutChromium(t testing.TB) string {
	t.Helper()
	path, err := FindChromium("")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v; CI is set, so the browser tests must run, not skip", err)
	}
	t.Skipf("skipping the real-browser test: %v", err)
	return ""
}

// Start launches a browser for a test, skipping it (or failing it in CI)
// when Chromium is missing and opts names none. The browser is closed when
// the test and its subtests finish, whether they passed or not; the
// cleanup fails the test if any of its processes survive, and logs the
// end of Chromium's output when the test failed. opts may be nil.
func Start(t testing.TB, opts *Options) *Browser {
	t.Helper()
	if opts == nil || opts.Chromium == "" {
		SkipWithoutChromium(t)
	}
	b, err := Launch(t.Context(), opts)
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	t.Cleanup(func() {
		err := b.Close()
		if t.Failed() {
			t.Logf("Chromium's output (last %d bytes):\n%s", len(b.Output()), b.Output())
		}
		if err != nil {
			t.Errorf("closing the browser: %v", err)
		}
	})
	return b
}

// Build returns the executable of the Go main package pkg, built once per
// test binary by BuildBinary. It fails the test when the build fails.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	path, err := BuildBinary(t.Context(), pkg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return path
}
