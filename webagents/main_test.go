package webagents

import (
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func specManifestJSON(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/spec-manifest.json")
	require.NoError(t, err)
	return b
}

func specManifest(t testing.TB) *Manifest {
	t.Helper()
	m, err := ParseManifest(specManifestJSON(t), &ParseOptions{BaseURL: "https://shop.example/products/kbd"})
	require.NoError(t, err)
	return m
}

// manifestWith parses a manifest whose actions are given as JSON, with the
// given workflow members merged in.
func manifestWith(t testing.TB, workflow, actions string) *Manifest {
	t.Helper()
	if workflow != "" {
		workflow = "," + workflow
	}
	doc := `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"` + workflow + `},"actions":` + actions + `}`
	m, err := ParseManifest([]byte(doc), nil)
	require.NoError(t, err)
	return m
}

func mustParseURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
