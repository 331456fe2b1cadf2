package extension_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/extension"
)

// BenchmarkWrite measures writing the extension and its configuration into
// a folder, as every Launch does.
func BenchmarkWrite(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ext")
	cfg := extension.Config{HubPort: 52789, HubToken: hubToken}
	b.ReportAllocs()
	for b.Loop() {
		if err := extension.Write(dir, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// The benchmarks below measure round trips through the real extension in
// headless Chromium: test → relay host → Chrome → service worker → page
// and back, or test → WebSocket → service worker → page and back.
// Allocations are the test process's only.

func BenchmarkNativeSnapshot(b *testing.B) {
	fx := getFixture(b)
	l := fx.native(b)
	open(b, fx, l, "/controls")
	b.ReportAllocs()
	for b.Loop() {
		r := l.call(b, "browser.snapshot", map[string]any{})
		require.Nil(b, r.Error)
	}
}

func BenchmarkNativeClick(b *testing.B) {
	fx := getFixture(b)
	l := fx.native(b)
	s := open(b, fx, l, "/click")
	ref := s.find(b, "button", "Add one").Ref
	b.ReportAllocs()
	for b.Loop() {
		r := l.call(b, "browser.click", map[string]any{"ref": ref})
		require.Nil(b, r.Error)
	}
}

func BenchmarkNativeTasksList(b *testing.B) {
	fx := getFixture(b)
	l := fx.native(b)
	b.ReportAllocs()
	for b.Loop() {
		r := l.call(b, "tasks.list", map[string]any{})
		require.Nil(b, r.Error)
	}
}

func BenchmarkHubRead(b *testing.B) {
	fx := getFixture(b)
	c := fx.hub.current(b)
	hubOpen(b, fx, c, "/plain")
	b.ReportAllocs()
	for b.Loop() {
		r := c.command(b, map[string]any{"action": "read", "selector": "#text"})
		require.Equal(b, "", r["error"])
	}
}
