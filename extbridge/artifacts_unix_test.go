//go:build unix

package extbridge

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FIFO in the artifacts folder must not block a request (the open of a
// FIFO for reading waits for a writer, holding an OS thread).
func TestArtifactsFIFONotOpened(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink("pipe", filepath.Join(dir, "link")))
	h, err := NewHub(testToken, &HubOptions{ArtifactsDir: dir})
	require.NoError(t, err)
	defer h.Close()

	for _, target := range []string{"/artifacts/pipe", "/artifacts/link"} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:52789"+target, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		served := make(chan struct{})
		go func() { h.ServeHTTP(w, r); close(served) }()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			// Unblock the open so that the goroutine ends, then fail.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			<-served
			t.Fatalf("GET %s blocked on the FIFO", target)
		}
		assert.Equal(t, http.StatusNotFound, w.Code, target)
	}
}
