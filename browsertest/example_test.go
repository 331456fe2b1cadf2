package browsertest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/browsertest"
)

// testAgentInChromium is a test as it stands in a _test.go file of yours
// (there, name it TestAgentInChromium): the reference extension in
// headless Chromium gives its native port to the test, the test runs an
// agent protocol host on it in-process, and an agent drives a page
// through that host. It skips without Chromium, and fails when CI is set.
func testAgentInChromium(t *testing.T) {
	pages := browsertest.NewPageServer(t, map[string]string{
		"/": `<!doctype html><title>Shop</title><h1>Cart</h1><button>Pay</button>`,
	})
	b := browsertest.Start(t, nil) // closed when the test ends, processes and folders gone

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	port, err := b.AcceptNative(ctx) // the extension started its native host: this test
	if err != nil {
		t.Fatalf("the extension never connected: %v\n%s", err, b.Output())
	}

	// The host, in the test process, serving agents on a Unix socket.
	dir, err := os.MkdirTemp("", "sock") // short: Unix socket paths are
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket, token := filepath.Join(dir, "bridge.sock"), "test-token"
	host := bridge.NewHost(port.Conn, nil)
	srv := bridge.NewServer(&bridge.ServerOptions{Extension: host, Token: token})
	l, err := bridge.ListenUnix(ctx, socket)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		if err := <-served; !errors.Is(err, bridge.ErrServerClosed) {
			t.Error(err)
		}
	}()
	hostDone := make(chan error, 1)
	go func() { hostDone <- host.Run(ctx) }()
	defer func() { port.Close(); <-hostDone }()

	// An agent: navigate, wait for the page to load, read it.
	c, err := browsertest.DialAgent(ctx, socket, token) // once the extension said hello
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Navigate(ctx, agentproto.NavigateParams{URL: pages.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	if err := pages.WaitLoaded(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Title != "Shop" {
		t.Errorf("title %q, want Shop", snap.Title)
	}
}

// An agent protocol host of your own, tested in the test process against
// the real extension in headless Chromium. The whole function is a test:
// call it from a TestXxx(t *testing.T) function. (Not run here: it needs
// Chromium; TestExample in this package runs it.)
func Example_inProcessHost() {
	_ = testAgentInChromium // func TestAgentInChromium(t *testing.T) { testAgentInChromium(t) }
}
