package webagents

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noPostServer wraps h and fails the test on any POST, proving the checker
// never runs an action.
func noPostServer(t *testing.T, build func(origin string) http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	h := build("http://" + srv.Listener.Addr().String())
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			t.Errorf("checker sent %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestCheckGoodSite(t *testing.T) {
	guarded := noPostServer(t, func(origin string) http.Handler {
		return newTestSite(t, &HandlerOptions{Origin: origin}).h
	})
	var c Client
	rep, err := c.Check(t.Context(), guarded.URL+"/products/kbd-75")
	require.NoError(t, err)
	assert.True(t, rep.Valid, "%v", rep.Problems)
	assert.Empty(t, rep.Warnings)
	assert.Equal(t, []string{"cart.add", "cart.state", "catalog.find"}, rep.ActionsInScope)
	assert.Equal(t, guarded.URL+"/api/agent/workflow", rep.Endpoint)
	require.Len(t, rep.Documents, 4)
	for _, d := range rep.Documents {
		assert.Equal(t, 200, d.Status, d.Method+" "+d.URL)
	}

	rep, err = c.Check(t.Context(), guarded.URL+"/about")
	require.NoError(t, err)
	assert.True(t, rep.Valid)
	require.Len(t, rep.Warnings, 1, "no action in scope is a warning")
	assert.Contains(t, rep.Warnings[0].Message, "no action is in scope")
}

func TestCheckProblems(t *testing.T) {
	manifest := string(specManifestJSON(t))
	md := "```webagents\n" + manifest + "\n```\n"
	good := map[string]func(http.ResponseWriter, *http.Request){
		MarkdownPath:  serve("text/markdown; charset=utf-8", md),
		WellKnownPath: serve("application/json", manifest),
	}
	with := func(path string, h func(http.ResponseWriter, *http.Request)) map[string]func(http.ResponseWriter, *http.Request) {
		out := map[string]func(http.ResponseWriter, *http.Request){}
		for k, v := range good {
			out[k] = v
		}
		if h == nil {
			delete(out, path)
		} else {
			out[path] = h
		}
		return out
	}
	tests := []struct {
		name    string
		docs    map[string]func(http.ResponseWriter, *http.Request)
		problem string // substring of a problem; "" means valid
		warning string // substring of a warning
	}{
		{"good", good, "", ""},
		{"json mirror missing", with(WellKnownPath, nil), "status 404", ""},
		{"markdown missing", with(MarkdownPath, nil), "status 404", ""},
		{"markdown wrong MIME", with(MarkdownPath, serve("text/plain", md)), "want text/markdown", ""},
		{"markdown without charset", with(MarkdownPath, serve("text/markdown", md)), "", "no charset"},
		{"json wrong MIME", with(WellKnownPath, serve("text/plain", manifest)), "want application/json", ""},
		{"json latin1", with(WellKnownPath, serve("application/json; charset=latin1", manifest)), "charset", ""},
		{"HEAD not served", with(WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			serve("application/json", manifest)(w, r)
		}), "HEAD " + WellKnownPath, ""},
		{"HEAD other type", with(MarkdownPath, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Type", "text/html")
				return
			}
			serve("text/markdown; charset=utf-8", md)(w, r)
		}), "differs from GET", ""},
		{"mirrors differ", with(WellKnownPath, serve("application/json", strings.Replace(manifest, `"maxOperations": 8`, `"maxOperations": 7`, 1))), "differs from the one", ""},
		{"mirrors equal as parsed JSON", with(WellKnownPath, serve("application/json", strings.Replace(manifest, `"maxOperations": 8`, `"maxOperations": 8.0`, 1))), "", ""},
		{"two fenced blocks", with(MarkdownPath, serve("text/markdown; charset=utf-8", md+md)), "exactly one", ""},
		{"no fenced block", with(MarkdownPath, serve("text/markdown; charset=utf-8", "# Shop\n")), "holds no manifest", ""},
		{"json path holds markdown", with(WellKnownPath, serve("application/json", md)), "must be raw JSON", ""},
		{"raw JSON at markdown path", with(MarkdownPath, serve("text/markdown; charset=utf-8", manifest)), "", "raw JSON"},
		{"cross-origin endpoint", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath:  serve("text/markdown; charset=utf-8", strings.Replace(md, `"/api/agent/workflow"`, `"https://evil.example/api"`, 1)),
			WellKnownPath: serve("application/json", strings.Replace(manifest, `"/api/agent/workflow"`, `"https://evil.example/api"`, 1))},
			"page's origin", ""},
		{"invalid manifest", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath:  serve("text/markdown; charset=utf-8", strings.Replace(md, `"write"`, `"delete"`, 1)),
			WellKnownPath: serve("application/json", manifest)},
			`$.actions["cart.add"].effect`, ""},
		{"numeric version and unknown field", map[string]func(http.ResponseWriter, *http.Request){
			MarkdownPath:  serve("text/markdown; charset=utf-8", strings.Replace(md, `"version": "0.1"`, `"version": 0.1, "x": 1`, 1)),
			WellKnownPath: serve("application/json", strings.Replace(manifest, `"version": "0.1"`, `"version": 0.1, "x": 1`, 1))},
			"", "unknown field"},
		{"redirected document", with(WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/manifest.json", http.StatusMovedPermanently)
		}), "", "redirected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := tt.docs
			if _, ok := docs["/manifest.json"]; !ok && tt.name == "redirected document" {
				docs["/manifest.json"] = serve("application/json", manifest)
			}
			srv := docServer(t, docs)
			var c Client
			rep, err := c.Check(t.Context(), srv.URL+"/products/kbd-75")
			require.NoError(t, err)
			if tt.problem == "" {
				assert.True(t, rep.Valid, "%v", rep.Problems)
			} else {
				assert.False(t, rep.Valid)
				assert.Contains(t, joinProblems(rep.Problems), tt.problem)
			}
			if tt.warning != "" {
				assert.Contains(t, joinProblems(rep.Warnings), tt.warning)
			}
		})
	}
}

func joinProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String())
		b.WriteString("\n")
	}
	return b.String()
}
