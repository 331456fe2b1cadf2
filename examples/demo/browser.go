package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/internal/browsertest"
	"github.com/agentbridge/agentbridge/internal/extension"
)

const hostPackage = "github.com/agentbridge/agentbridge/examples/weboperator-host"

// browserSession is headless Chromium with the reference extension, the Go
// native host it started, and the hub its service worker dialed.
type browserSession struct {
	chromium *browsertest.Browser
	agent    *agentproto.Client
	hub      *extbridge.Hub
	socket   string // the host's agent socket
	token    string // and its API token
}

const chromiumMissing = "Chromium not found, so the browser half of the tour did not run. " +
	"Install it (Debian/Ubuntu: sudo apt-get install chromium; Fedora: sudo dnf install chromium) " +
	"or pass --chromium /path/to/chromium, then run go run ./examples/demo again"

// launchStep starts the hub, builds the native host and launches Chromium
// with the reference extension, then waits for both of its sides.
func launchStep(ctx context.Context, r *runner) (string, error) {
	if r.opts.NoBrowser {
		return "", skip("--no-browser given")
	}
	if err := checkDisplay(r.opts.Headful, runtime.GOOS, os.Getenv); err != nil {
		return "", err
	}
	chromium, err := browsertest.FindChromium(r.opts.Chromium)
	if errors.Is(err, browsertest.ErrChromiumNotFound) && r.opts.Chromium == "" && os.Getenv(browsertest.ChromiumEnv) == "" {
		return "", skip(chromiumMissing)
	}
	if err != nil {
		return "", err
	}
	r.logf("Chromium: %s", chromium)
	if err := r.startShop(ctx); err != nil {
		return "", err
	}

	r.logf("building examples/weboperator-host, the native messaging host Chromium will start")
	host, err := browsertest.BuildBinary(ctx, hostPackage)
	if err != nil {
		return "", err
	}
	r.atEnd(func() { _ = browsertest.RemoveBuilds() })

	hubToken := extbridge.NewToken()
	hub, err := extbridge.NewHub(hubToken, nil)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()
	r.atEnd(func() { hub.Close(); <-served })
	hubPort := l.Addr().(*net.TCPAddr).Port
	r.logf("extension bridge hub listening on ws://%s/ws", l.Addr())

	apiToken := randomHex(16)
	socket := filepath.Join(r.dir, "bridge.sock")
	b, err := browsertest.Launch(ctx, &browsertest.Options{
		Chromium: chromium,
		HostPath: host,
		Env: []string{
			agentproto.EnvToken + "=" + apiToken,
			agentproto.EnvSocket + "=" + socket,
		},
		Extension: extension.Config{
			HubPort:   hubPort,
			HubToken:  hubToken,
			Approvals: extension.ApprovalApprove,
		},
		Headful: r.opts.Headful,
		Dir:     filepath.Join(r.dir, "browser"),
	})
	if err != nil {
		return "", err
	}
	r.atEnd(func() { _ = b.Close() })
	// Chromium leaves folders of its own in its TMPDIR: the harness gives
	// it a private one, which Close removes.
	r.logf("Chromium's TMPDIR: %s", b.TempDir)
	r.logf("Chromium started (pid %d) with the reference extension %s", b.Pid(), extension.ID)

	// Wait for both sides, but not for a browser that is gone: a Chromium
	// that cannot start (no display for --headful, a broken install)
	// exits at once.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wctx, cancelExited := context.WithCancelCause(wctx)
	defer cancelExited(nil)
	go func() {
		select {
		case <-b.Exited():
			cancelExited(&exitedError{output: lastLines(b.Output(), 3)})
		case <-wctx.Done():
		}
	}()
	agent, err := browsertest.DialAgent(wctx, socket, apiToken)
	if err != nil {
		if exited := (*exitedError)(nil); errors.As(context.Cause(wctx), &exited) {
			err = exited
		}
		return "", fmt.Errorf("the native host never came online: %w", err)
	}
	r.atEnd(func() { agent.Close() })
	r.logf("Chromium started the Go host (%s); its socket %s answers, extension online", pidList(b.HostPids()), socket)
	if err := hub.WaitConnected(wctx); err != nil {
		if exited := (*exitedError)(nil); errors.As(context.Cause(wctx), &exited) {
			err = exited
		}
		return "", fmt.Errorf("the extension never dialed the hub: %w", err)
	}
	info, _ := hub.Extension()
	r.logf("the extension's service worker dialed the hub (Origin %s, version %s)", info.Origin, info.Version)
	r.browser = &browserSession{chromium: b, agent: agent, hub: hub, socket: socket, token: apiToken}
	return "native host started by Chromium and online; service worker connected to the hub", nil
}

// saveScreenshot writes data to a new file in Options.ScreenshotDir (or
// the system's temporary folder) named after pattern, as os.CreateTemp
// does: a fresh name, created exclusively, so nothing already in a shared
// folder (a file, or a link another user planted) is overwritten.
func (r *runner) saveScreenshot(pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(r.opts.ScreenshotDir, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// agentProtocolStep drives the shop through the agent protocol: snapshot,
// type and submit a search, click a result, screenshot.
func agentProtocolStep(ctx context.Context, r *runner) (string, error) {
	if r.browser == nil {
		return "", skip("needs the Chromium step above")
	}
	c := r.browser.agent
	nav, err := c.Navigate(ctx, agentproto.NavigateParams{URL: r.shopURL + "/"})
	if err != nil {
		return "", err
	}
	r.logf("browser.navigate %s → tab %d", nav.URL, nav.TabID)
	s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
	if err != nil {
		return "", err
	}
	r.logf("browser.snapshot: %q, %d nodes, e.g.", s.Title, len(s.Nodes))
	for _, n := range s.Nodes[:min(4, len(s.Nodes))] {
		r.logf("  %-5s %-8s %q", n.Ref, n.Role, n.Name)
	}
	search := findNode(s, "textbox", "Search")
	if search == nil {
		return "", errors.New("the snapshot has no search box")
	}
	if _, err := c.Type(ctx, agentproto.TypeParams{Ref: search.Ref, Text: "keyboard", Submit: true}); err != nil {
		return "", err
	}
	r.logf("browser.type %s \"keyboard\" with submit", search.Ref)

	// The type with submit answered once the results page loaded, so the
	// first snapshot normally shows the result; poll briefly in case the
	// page fills it in after loading.
	var link *agentproto.Node
	for deadline := time.Now().Add(10 * time.Second); ; {
		if s, err = c.Snapshot(ctx, agentproto.SnapshotParams{}); err != nil {
			return "", err
		}
		if link = findNode(s, "link", "Wireless Keyboard 75%"); link != nil {
			break
		}
		if time.Now().After(deadline) {
			return "", errors.New("the search results never showed the keyboard")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	r.logf("results page %s shows %s %q", s.URL, link.Ref, link.Name)
	res, err := c.Click(ctx, agentproto.ClickParams{Ref: link.Ref, Reason: "open the product"})
	if err != nil {
		return "", err
	}
	if !res.OK() {
		return "", fmt.Errorf("click failed: %s", res.Result.Error)
	}
	shot, err := c.Screenshot(ctx, agentproto.ScreenshotParams{})
	if err != nil {
		return "", err
	}
	path, err := r.saveScreenshot("agentbridge-demo-agentproto-*.jpg", shot.Data)
	if err != nil {
		return "", err
	}
	r.logf("browser.click %s, then browser.screenshot → %s (%d KiB %s)", link.Ref, path, len(shot.Data)>>10, shot.MIMEType)
	return "searched the shop, opened the keyboard, screenshot " + path, nil
}

func findNode(s *agentproto.Snapshot, role, name string) *agentproto.Node {
	for i := range s.Nodes {
		if s.Nodes[i].Role == role && s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// extensionBridgeStep drives the same browser through the hub.
func extensionBridgeStep(ctx context.Context, r *runner) (string, error) {
	if r.browser == nil {
		return "", skip("needs the Chromium step above")
	}
	hub := r.browser.hub
	res, err := hub.Navigate(ctx, r.shopURL+"/products/mouse-w")
	if err != nil {
		return "", err
	}
	r.logf("navigate → %s %q", res.URL, res.Title)
	for _, sel := range []string{"h1", "p.price"} {
		read, err := hub.Read(ctx, sel)
		if err != nil {
			return "", err
		}
		r.logf("read %s → %q", sel, firstLine(read.Content))
	}
	tabs, err := hub.Tabs(ctx)
	if err != nil {
		return "", err
	}
	r.logf("tabs → %d open", len(tabs))
	shot, err := hub.Screenshot(ctx)
	if err != nil {
		return "", err
	}
	ext := ".png"
	if shot.MIMEType == "image/jpeg" {
		ext = ".jpg"
	}
	path, err := r.saveScreenshot("agentbridge-demo-extbridge-*"+ext, shot.Data)
	if err != nil {
		return "", err
	}
	r.logf("screenshot → %s (%d KiB %s)", path, len(shot.Data)>>10, shot.MIMEType)
	d, err := hub.RequestApproval(ctx, extbridge.ApprovalRequest{ToolName: "Bash", ToolArgs: `{"command":"gh api user"}`})
	if err != nil {
		return "", err
	}
	r.logf("approval_request Bash → the panel answered %s", d)
	return fmt.Sprintf("navigate, read, tabs, screenshot %s; approval %s", path, d), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// checkDisplay refuses --headful where a window cannot open: on Linux and
// the BSDs Chromium needs an X or Wayland display, and without one exits
// at once with an error only its own log shows.
func checkDisplay(headful bool, goos string, getenv func(string) string) error {
	switch goos {
	case "darwin", "windows", "ios", "android":
		return nil
	}
	if headful && getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return errors.New("--headful needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set; run without --headful for headless Chromium")
	}
	return nil
}

// exitedError reports a browser that exited before both of its sides came
// online.
type exitedError struct{ output string }

func (e *exitedError) Error() string {
	return "the browser exited; Chromium's last output: " + e.output
}

// lastLines returns the last n non-empty lines of out, joined with " | ".
func lastLines(out []byte, n int) string {
	var lines []string
	for l := range strings.Lines(string(out)) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// pidList says which processes pids are: "pid 17779", "pids 17779, 17781".
func pidList(pids []int) string {
	switch len(pids) {
	case 0:
		return "pid unknown"
	case 1:
		return "pid " + strconv.Itoa(pids[0])
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return "pids " + strings.Join(s, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
