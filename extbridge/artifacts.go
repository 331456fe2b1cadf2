package extbridge

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
)

// serveArtifact serves GET /artifacts/<relative path> from ArtifactsDir,
// read-only: no listings, and no escape from the directory by "..",
// absolute paths or symbolic links (os.Root refuses them).
func (h *Hub) serveArtifact(w http.ResponseWriter, r *http.Request) {
	if !loopbackRequest(r) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.artifacts == nil {
		http.NotFound(w, r)
		return
	}
	name, ok := artifactName(strings.TrimPrefix(r.URL.Path, "/artifacts/"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	// A FIFO or device would block the open (and hold an OS thread) until
	// some other process writes to it: only regular files are opened, and
	// the open itself is non-blocking in case the file was swapped between
	// the stat and the open.
	if info, err := h.artifacts.Stat(name); err != nil || !info.Mode().IsRegular() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Debug("extbridge: artifact refused", "err", err)
		}
		http.NotFound(w, r)
		return
	}
	f, err := h.artifacts.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.log.Debug("extbridge: artifact refused", "err", err)
		}
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	// An HTML or SVG artifact must not run script with this origin.
	hdr.Set("Content-Security-Policy", "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
	hdr.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, info.Name(), info.ModTime(), f)
}

// artifactName validates a request path relative to the artifacts
// directory: non-empty, no empty, "." or ".." element, no backslash or NUL.
// os.Root enforces containment as well; this keeps the refusals uniform.
func artifactName(p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return "", false
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == "" || elem == "." || elem == ".." {
			return "", false
		}
	}
	return path.Clean(p), true
}
