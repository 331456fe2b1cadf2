package webagents

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingSite is the test site, recording every request it receives.
func countingSite(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewUnstartedServer(nil)
	s := newTestSite(t, &HandlerOptions{Origin: "http://" + srv.Listener.Addr().String()})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		s.h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = nil
		return out
	}
}

// TestRunSendsOnlyTheBatch: issue 26. Run with the caller's Discovery makes
// one request, the POST, and checks consent against the manifest the caller
// saw; only DiscoverAndRun discovers.
func TestRunSendsOnlyTheBatch(t *testing.T) {
	srv, requests := countingSite(t)
	page := srv.URL + "/products/kbd-75"
	var c Client
	d, err := c.Discover(t.Context(), page)
	require.NoError(t, err)
	assert.Equal(t, []string{"GET " + MarkdownPath}, requests())

	res, err := c.Run(t.Context(), d, specOps(), &RunOptions{AllowWrites: true})
	require.NoError(t, err)
	assert.True(t, res.Response.OK)
	assert.Same(t, d, res.Discovery)
	assert.Equal(t, []string{"POST /api/agent/workflow"}, requests(), "the batch is the only request")

	for range 3 {
		_, err = c.Run(t.Context(), d, specOps()[:1], nil)
		require.NoError(t, err)
	}
	assert.Len(t, requests(), 3, "one request per batch")

	// Refusals made from the caller's manifest send nothing at all.
	_, err = c.Run(t.Context(), d, specOps(), nil)
	assert.ErrorIs(t, err, ErrConsentRequired)
	_, err = c.Run(t.Context(), d, []Operation{{ID: "x", Action: "admin.drop"}}, nil)
	assert.ErrorIs(t, err, ErrNotPublished)
	assert.Empty(t, requests())

	res, err = c.DiscoverAndRun(t.Context(), page, specOps()[:1], nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"GET " + MarkdownPath, "POST /api/agent/workflow"}, requests())
	assert.Equal(t, DiscoveryFound, res.Discovery.Status)
}

// TestRunChecksTheCallersManifest: consent and scope come from d.Manifest,
// not from what the site publishes when the batch is sent.
func TestRunChecksTheCallersManifest(t *testing.T) {
	srv, requests := countingSite(t)
	page := srv.URL + "/products/kbd-75"
	var c Client
	d, err := c.Discover(t.Context(), page)
	require.NoError(t, err)
	requests()

	// A caller that keeps a manifest builds the Discovery from it: here one
	// in which the site's read catalog.find is a write.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(specManifestJSON(t), &doc))
	doc["actions"].(map[string]any)["catalog.find"].(map[string]any)["effect"] = "write"
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	m, err := ParseManifest(raw, nil)
	require.NoError(t, err)
	kept := &Discovery{PageURL: page, Manifest: m}
	_, err = c.Run(t.Context(), kept, specOps()[:1], nil)
	var ce *ConsentError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "catalog.find", ce.Action)
	assert.Empty(t, requests(), "refused before sending")

	res, err := c.Run(t.Context(), &Discovery{PageURL: page, Manifest: d.Manifest}, specOps()[:1], nil)
	require.NoError(t, err)
	assert.True(t, res.Response.OK)
	assert.Equal(t, []string{"POST /api/agent/workflow"}, requests(), "a Discovery built from a kept manifest")
}

func TestRunRefusesADiscoveryWithoutAManifest(t *testing.T) {
	var c Client
	_, err := c.Run(t.Context(), nil, specOps(), nil)
	assert.ErrorContains(t, err, "needs the Discovery")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String() + "/products"
	require.NoError(t, ln.Close())
	_, err = c.Discover(t.Context(), down)
	var de *DiscoveryError
	require.ErrorAs(t, err, &de)
	_, err = c.Run(t.Context(), de.Discovery, specOps(), nil)
	assert.ErrorIs(t, err, ErrNotAvailable)
	assert.ErrorAs(t, err, &de)

	// The endpoint is resolved against the page: a manifest used for a page
	// of another origin than its endpoint's is refused.
	m, err := ParseManifest(specManifestJSON(t), &ParseOptions{BaseURL: "https://shop.example"})
	require.NoError(t, err)
	m.Workflow.Endpoint = "https://evil.example/api"
	_, err = c.Run(t.Context(), &Discovery{PageURL: "https://shop.example/products", Manifest: m}, specOps()[:1], nil)
	assert.ErrorIs(t, err, ErrCrossOriginEndpoint)
}

// TestDiscoverSiteDown: issue 26. A site that is down is an error carrying
// the Discovery, never a nil error with a nil Manifest.
func TestDiscoverSiteDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String() + "/products"
	require.NoError(t, ln.Close())
	var c Client
	d, err := c.Discover(t.Context(), down)
	require.Error(t, err)
	assert.Nil(t, d)
	assert.ErrorIs(t, err, ErrNotAvailable)
	var de *DiscoveryError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, DiscoveryUnavailable, de.Discovery.Status)
	assert.Equal(t, down, de.Discovery.PageURL)
	assert.Nil(t, de.Discovery.Manifest)
}

func TestDiscoveryStatusZeroIsUnknown(t *testing.T) {
	var zero DiscoveryStatus
	assert.NotEqual(t, DiscoveryFound, zero)
	assert.Equal(t, DiscoveryUnknown, zero)
	assert.Equal(t, "unknown", zero.String())
	assert.Equal(t, "DiscoveryStatus(-1)", DiscoveryStatus(-1).String())
	assert.Equal(t, "found", DiscoveryFound.String())
}

// TestDiscoveryStatusText: every status reads back from its JSON text, and
// a text that names none is an error.
func TestDiscoveryStatusText(t *testing.T) {
	for s := DiscoveryUnknown; s <= DiscoveryNoActions; s++ {
		data, err := json.Marshal(s)
		require.NoError(t, err)
		var back DiscoveryStatus
		require.NoError(t, json.Unmarshal(data, &back), "%s", data)
		assert.Equal(t, s, back)
	}
	var back DiscoveryStatus
	assert.Error(t, json.Unmarshal([]byte(`"lost"`), &back))
	assert.Error(t, json.Unmarshal([]byte(`1`), &back), "a number is not a status's text")
}
