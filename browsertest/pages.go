package browsertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// loadedPath is the route the pages' load beacons post to.
const loadedPath = "/.browsertest/loaded"

// PageServer serves HTML pages on 127.0.0.1 for the browser to open, and
// tells the test when the browser has loaded one: each document it serves
// ends with a small script that, at the page's load event, posts the
// page's path back to the server ([PageServer.WaitLoaded]). Other paths
// get 404. Its methods are safe for concurrent use.
type PageServer struct {
	// Server is the running server: URL is its base URL,
	// http://127.0.0.1:<port>.
	*httptest.Server

	mu      sync.Mutex
	pages   map[string]string
	loads   map[string]int // loads not yet taken by WaitLoaded
	changed chan struct{}  // closed and replaced at each load
}

// NewPageServer starts a PageServer with pages, a map from URL path
// ("/form") to HTML document, and closes it when the test ends. pages may
// be nil; [PageServer.Handle] adds more.
func NewPageServer(t testing.TB, pages map[string]string) *PageServer {
	t.Helper()
	s := &PageServer{pages: make(map[string]string), loads: make(map[string]int), changed: make(chan struct{})}
	for path, doc := range pages {
		s.pages[path] = doc
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	t.Cleanup(s.Close)
	return s
}

// Handle serves doc at path from now on, replacing what was there.
func (s *PageServer) Handle(path, doc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = doc
}

// WaitLoaded waits until the browser has loaded the page at path (its
// load event fired), or ctx ends. Each load is taken once: a load that
// happened before the call and that no earlier WaitLoaded returned for
// counts, so navigating and then waiting never misses the load, and two
// loads of a page satisfy two waits.
func (s *PageServer) WaitLoaded(ctx context.Context, path string) error {
	for {
		s.mu.Lock()
		if s.loads[path] > 0 {
			s.loads[path]--
			s.mu.Unlock()
			return nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *PageServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == loadedPath {
		s.loaded(w, r)
		return
	}
	s.mu.Lock()
	doc, ok := s.pages[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte(doc))
	w.Write(beacon(r.URL.Path))
}

// beacon is the script appended to the document served at path. The
// path is a JSON string, which json.Marshal writes with <, > and &
// escaped, so a path cannot end the script element.
func beacon(path string) []byte {
	quoted, _ := json.Marshal(path)
	return []byte("\n<script>addEventListener('load',()=>navigator.sendBeacon('" + loadedPath +
		"?path='+encodeURIComponent(" + string(quoted) + ")))</script>\n")
}

// loaded counts a load of a page this server has. Anything else posted
// there is ignored.
func (s *PageServer) loaded(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := r.URL.Query().Get("path")
	s.mu.Lock()
	if _, ok := s.pages[path]; ok {
		s.loads[path]++
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
