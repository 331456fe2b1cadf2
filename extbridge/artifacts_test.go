package extbridge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArtifacts(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "artifacts")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "img", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "img", "cat.png"), []byte("\x89PNG\r\n\x1a\ncat"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "escape.txt")))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "relescape.txt")))
	require.NoError(t, os.Symlink("img/cat.png", filepath.Join(dir, "inside.png")))

	h, err := NewHub(testToken, &HubOptions{ArtifactsDir: dir})
	require.NoError(t, err)
	defer h.Close()

	tests := []struct {
		name, method, target string
		code                 int
		body                 string
	}{
		{"file", "GET", "/artifacts/img/cat.png", 200, "\x89PNG\r\n\x1a\ncat"},
		{"head", "HEAD", "/artifacts/img/cat.png", 200, ""},
		{"symlink inside", "GET", "/artifacts/inside.png", 200, "\x89PNG\r\n\x1a\ncat"},
		{"dot dot", "GET", "/artifacts/../secret.txt", 404, ""},
		{"encoded dot dot", "GET", "/artifacts/%2e%2e/secret.txt", 404, ""},
		{"nested dot dot", "GET", "/artifacts/img/../../secret.txt", 404, ""},
		{"absolute", "GET", "/artifacts//etc/passwd", 404, ""},
		{"encoded absolute", "GET", "/artifacts/%2Fetc%2Fpasswd", 404, ""},
		{"backslash", "GET", `/artifacts/..%5Csecret.txt`, 404, ""},
		{"absolute symlink out", "GET", "/artifacts/escape.txt", 404, ""},
		{"relative symlink out", "GET", "/artifacts/relescape.txt", 404, ""},
		{"directory listing", "GET", "/artifacts/img/", 404, ""},
		{"directory", "GET", "/artifacts/img", 404, ""},
		{"root", "GET", "/artifacts/", 404, ""},
		{"missing", "GET", "/artifacts/none.png", 404, ""},
		{"nul", "GET", "/artifacts/a%00b", 404, ""},
		{"post", "POST", "/artifacts/img/cat.png", 405, ""},
		{"other path", "GET", "/secret.txt", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://127.0.0.1:52789"+tt.target, nil)
			r.RemoteAddr = "127.0.0.1:40000"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tt.code, w.Code)
			body, _ := io.ReadAll(w.Body)
			if tt.code == 200 {
				assert.Equal(t, tt.body, string(body))
				assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
				assert.Contains(t, w.Header().Get("Content-Security-Policy"), "sandbox")
			} else {
				assert.NotContains(t, string(body), "secret")
			}
		})
	}
}

func TestArtifactsAbsentWithoutDir(t *testing.T) {
	h, err := NewHub(testToken, nil)
	require.NoError(t, err)
	defer h.Close()
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:52789/artifacts/x.png", nil)
	r.RemoteAddr = "127.0.0.1:40000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusNotFound, w.Code)
}

func TestArtifactsOverRealSocket(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644))
	e := newTCPEnv(t, HubOptions{ArtifactsDir: dir})
	base := "http" + e.url[len("ws"):len(e.url)-len("/ws")]
	resp, err := http.Get(base + "/artifacts/a.txt")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "hello", string(body))
	resp2, err := http.Get(base + "/artifacts/../../etc/passwd")
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp2.StatusCode)
	http.DefaultClient.CloseIdleConnections()
}

func TestProjectArtifacts(t *testing.T) {
	base := t.TempDir()
	projects := filepath.Join(base, "projects")
	for _, p := range []string{"alpha/artifacts/img", "beta/artifacts", "gamma"} {
		require.NoError(t, os.MkdirAll(filepath.Join(projects, p), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(projects, "alpha", "artifacts", "img", "cat.png"), []byte("cat"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(projects, "alpha", "notes.txt"), []byte("secret notes"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(projects, "beta", "artifacts", "b.txt"), []byte("beta secret"), 0o644))
	// A link from one project's artifacts into another project's.
	require.NoError(t, os.Symlink(filepath.Join(projects, "beta", "artifacts", "b.txt"), filepath.Join(projects, "alpha", "artifacts", "link.txt")))
	require.NoError(t, os.Symlink(base, filepath.Join(projects, "out")))
	classic := filepath.Join(base, "classic")
	require.NoError(t, os.MkdirAll(filepath.Join(classic, "img"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(classic, "img", "dog.png"), []byte("dog"), 0o644))

	h, err := NewHub(testToken, &HubOptions{ProjectsDir: projects, ArtifactsDir: classic})
	require.NoError(t, err)
	defer h.Close()
	tests := []struct {
		target string
		code   int
		body   string
	}{
		{"/artifacts/alpha/img/cat.png", 200, "cat"},
		{"/artifacts/alpha/../alpha/img/cat.png", 404, ""},
		{"/artifacts/alpha/link.txt", 404, ""},
		{"/artifacts/alpha/notes.txt", 404, ""},
		{"/artifacts/out/classic/img/dog.png", 404, ""},
		{"/artifacts/gamma/x", 404, ""},
		{"/artifacts/img/dog.png", 200, "dog"}, // no project "img": the classic route
		{"/artifacts/beta", 404, ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:52789"+tt.target, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.Equal(t, tt.code, w.Code, tt.target)
		if tt.code == 200 {
			assert.Equal(t, tt.body, w.Body.String(), tt.target)
		} else {
			assert.NotContains(t, w.Body.String(), "secret", tt.target)
		}
	}
	_, err = NewHub(testToken, &HubOptions{ProjectsDir: filepath.Join(base, "none")})
	assert.Error(t, err)
}
