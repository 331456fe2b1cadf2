package webagents

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manifestJSON is a one-action manifest with the given endpoint and the
// action's path prefixes.
func manifestJSON(t *testing.T, endpoint string, prefixes ...string) string {
	t.Helper()
	action := map[string]any{"effect": "read"}
	if prefixes != nil {
		action["pathPrefixes"] = prefixes
	}
	b, err := json.Marshal(map[string]any{"version": "0.1", "workflow": map[string]any{"endpoint": endpoint},
		"actions": map[string]any{"a": action}})
	require.NoError(t, err)
	return string(b)
}

// TestBackslashEndpointsAndPrefixes: a browser's URL parser reads "\" as
// "/" in http(s) URLs, so "/\host/wf" names another host. The checker, the
// strict parse and NewHandler refuse a backslash in the endpoint or a path
// prefix; the client reads them as the originating client (WHATWG URLs)
// does: a cross-origin endpoint is unsafe, "/api\wf" is "/api/wf", and a
// prefix with a backslash matches no page.
func TestBackslashEndpointsAndPrefixes(t *testing.T) {
	const page = "https://shop.example/store/x"
	manifests := map[string]string{
		"endpoint /\\host":  manifestJSON(t, `/\evil.example/wf`),
		"endpoint \\\\host": manifestJSON(t, `\\evil.example/wf`),
		"endpoint /api\\wf": manifestJSON(t, `/api\wf`),
		"prefix":            manifestJSON(t, "/api/wf", `/store\x`),
	}
	for name, doc := range manifests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest([]byte(doc), &ParseOptions{BaseURL: page, Strict: true})
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, "the strict parse refuses it")
			assert.Contains(t, joinProblems(ve.Problems), "backslash")

			var m Manifest
			require.NoError(t, json.Unmarshal([]byte(doc), &m))
			for _, a := range m.Actions {
				if a.Effect == "" {
					a.Effect = EffectRead
				}
				if a.PathPrefixes == nil {
					a.PathPrefixes = []string{"/"}
				}
			}
			_, err = NewHandler(&m, map[string]ActionHandler{"a": ActionFunc(nil)}, &HandlerOptions{Origin: "https://shop.example"})
			require.Error(t, err, "a site must not serve a manifest clients refuse")
			assert.Contains(t, err.Error(), "backslash")

			srv := mirrorSite(t, doc)
			var c Client
			rep, err := c.Check(t.Context(), srv.URL+"/store/x")
			require.NoError(t, err)
			assert.False(t, rep.Valid, "the checker refuses it")
			assert.Contains(t, joinProblems(rep.Problems), "backslash")
		})
	}

	// In the query a backslash is data: browsers keep it.
	_, err := ParseManifest([]byte(manifestJSON(t, `/api/wf?q=a\b`)), &ParseOptions{BaseURL: page, Strict: true})
	assert.NoError(t, err)

	// The client, as BetterWright reads the same documents.
	discover := func(t *testing.T, doc string) *Discovery {
		srv := docServer(t, map[string]func(http.ResponseWriter, *http.Request){WellKnownPath: serve("application/json", doc)})
		var c Client
		d, err := c.Discover(t.Context(), srv.URL+"/store/x")
		return outcome(t, d, err)
	}
	for _, name := range []string{"endpoint /\\host", "endpoint \\\\host"} {
		d := discover(t, manifests[name])
		assert.Equal(t, DiscoveryUnsafe, d.Status, "%s resolves to another origin", name)
		assert.ErrorIs(t, d.Err, ErrCrossOriginEndpoint)
	}
	d := discover(t, manifests["endpoint /api\\wf"])
	require.Equal(t, DiscoveryFound, d.Status, "%v", d.Err)
	assert.True(t, strings.HasSuffix(d.Endpoint, "/api/wf"), "posted where a browser would: %s", d.Endpoint)
	assert.Contains(t, joinProblems(d.Warnings), "backslash")
	d = discover(t, manifests["prefix"])
	assert.Equal(t, DiscoveryNoActions, d.Status, "a prefix with a backslash matches no page")
	assert.Contains(t, joinProblems(d.Warnings), "backslash")

	// A page URL is read as a browser reads it: "\" is "/" in its path.
	srv := mirrorSite(t, manifestJSON(t, "/api/wf", "/store"))
	var c Client
	d, err = c.Discover(t.Context(), srv.URL+`\store\x`)
	require.NoError(t, err)
	assert.Equal(t, DiscoveryFound, d.Status)
	assert.Equal(t, srv.URL+"/store/x", d.PageURL)
}
