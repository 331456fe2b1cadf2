package extbridge

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
)

// serveArtifact serves GET /artifacts/<slug>/<relative path> from the
// project's artifacts folder under ProjectsDir, else GET
// /artifacts/<relative path> from ArtifactsDir, read-only: no listings,
// and no escape from the folder by "..", absolute paths or symbolic links
// (os.Root refuses them).
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
	name, ok := artifactName(strings.TrimPrefix(r.URL.Path, "/artifacts/"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	if root, rel, ok := h.projectArtifacts(name); ok {
		defer root.Close()
		h.serveFrom(w, r, root, rel)
		return
	}
	if h.artifacts == nil {
		http.NotFound(w, r)
		return
	}
	h.serveFrom(w, r, h.artifacts, name)
}

// projectArtifacts resolves /artifacts/<slug>/<rel> to the slug's
// artifacts folder under ProjectsDir, opened as a root of its own so that
// a symbolic link cannot lead into another project's files.
func (h *Hub) projectArtifacts(name string) (*os.Root, string, bool) {
	if h.projects == nil {
		return nil, "", false
	}
	slug, rel, ok := strings.Cut(name, "/")
	if !ok {
		return nil, "", false
	}
	root, err := h.projects.OpenRoot(slug + "/artifacts")
	if err != nil {
		return nil, "", false
	}
	return root, rel, true
}

// serveFrom serves the regular file name of root.
func (h *Hub) serveFrom(w http.ResponseWriter, r *http.Request, root *os.Root, name string) {
	// A FIFO or device would block the open (and hold an OS thread) until
	// some other process writes to it: only regular files are opened, and
	// the open itself is non-blocking in case the file was swapped between
	// the stat and the open.
	if info, err := root.Stat(name); err != nil || !info.Mode().IsRegular() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.log.Debug("extbridge: artifact refused", "err", err)
		}
		http.NotFound(w, r)
		return
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
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
