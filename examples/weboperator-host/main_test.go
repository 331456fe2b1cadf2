package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
	"github.com/agentbridge/agentbridge/internal/hostload"
	"github.com/agentbridge/agentbridge/internal/syncbuf"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var hostBinary string

// TestMain builds the host once for every test.
func TestMain(m *testing.M) {
	bin, remove, err := hostload.Build(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBinary = bin
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { remove(); os.Exit(code) }))
}

const extensionID = "pgnpnlnhjmjbmobnchmlaaonbieoelff"

// chromeStart starts the built host as Chrome does: argv[1] the caller's
// origin, the binary's folder as working directory, the environment
// inherited, stdio pipes to a stand-in extension in this process.
type hostProcess struct {
	cmd    *exec.Cmd
	ext    *agentprototest.Extension
	socket string
	stderr *syncbuf.Buffer
	stdin  io.WriteCloser
	done   chan error
}

func chromeStart(t *testing.T, handler agentprototest.Handler, env ...string) *hostProcess {
	t.Helper()
	return chromeStartLimited(t, handler, 0, env...)
}

// chromeStartLimited is chromeStart with the host's open files limited to
// maxFiles (0: unchanged).
func chromeStartLimited(t *testing.T, handler agentprototest.Handler, maxFiles int, env ...string) *hostProcess {
	t.Helper()
	dir, err := os.MkdirTemp("", "woh") // short: socket paths are limited to 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "bridge.sock")
	cmd := exec.Command(hostBinary, nativemsg.ExtensionOrigin(extensionID))
	if maxFiles > 0 {
		cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, maxFiles),
			hostBinary, nativemsg.ExtensionOrigin(extensionID))
	}
	cmd.Dir = filepath.Dir(hostBinary)
	cmd.Env = append(os.Environ(),
		"WEBOPERATOR_API_TOKEN=test-token",
		"WEBOPERATOR_AGENT_SOCKET="+socket,
		"WEBOPERATOR_BRIDGE_PORT=0")
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &hostProcess{cmd: cmd, socket: socket, stderr: &syncbuf.Buffer{}, stdin: stdin, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	browser := nativemsg.NewConn(stdout, stdin, stdin, &nativemsg.ConnOptions{ReadLimit: nativemsg.DefaultWriteLimit, WriteLimit: nativemsg.DefaultReadLimit})
	p.ext = agentprototest.NewExtension(browser, &agentprototest.Options{Handler: handler})
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		p.ext.Close()
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("host stderr:\n%s", p.stderr)
		}
	})
	return p
}

func (p *hostProcess) dial(t *testing.T) *agentproto.Client {
	t.Helper()
	var c *agentproto.Client
	require.Eventually(t, func() bool {
		var err error
		c, err = agentproto.Dial(t.Context(), p.socket, &agentproto.ClientOptions{Token: "test-token"})
		if err != nil {
			return false
		}
		h, err := c.Health(t.Context())
		if err != nil || !h.ExtensionOnline() {
			c.Close()
			return false
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestHostStartedLikeChrome(t *testing.T) {
	p := chromeStart(t, agentprototest.Echo)
	c := p.dial(t)

	fi, err := os.Stat(p.socket)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket mode")

	var res json.RawMessage
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"ref":"@e1","index":7}`), &res))
	assert.JSONEq(t, `{"ref":"@e1","index":7}`, string(res))

	// The extension disconnects: the host removes its socket and exits.
	p.ext.Vanish()
	select {
	case err := <-p.done:
		assert.NoError(t, err)
		p.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("the host did not exit after its input closed")
	}
	_, err = os.Lstat(p.socket)
	assert.True(t, errors.Is(err, os.ErrNotExist), "socket removed at exit: %v", err)
}

func TestHostSIGTERMFailsPendingWithStreamClosed(t *testing.T) {
	p := chromeStart(t, agentprototest.HandlerFunc(func(ctx context.Context, r *agentprototest.Request) (any, error) {
		if r.Type == "tasks.wait" {
			<-ctx.Done() // never answers
			return nil, agentprototest.ErrNoReply
		}
		return r.Payload, nil
	}))
	c := p.dial(t)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), agentproto.TypeTasksWait, agentproto.WaitParams{ID: "t1"}, nil) }()
	require.Eventually(t, func() bool { return p.ext.Received() >= 1 }, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-errc:
		var re *agentproto.RemoteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "Extension native messaging stream closed", re.Message)
		assert.ErrorIs(t, err, agentproto.ErrStreamClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the pending request was not failed")
	}
	select {
	case err := <-p.done:
		assert.NoError(t, err)
		p.done <- err
	case <-time.After(3 * time.Second):
		t.Fatal("the host did not exit after SIGTERM")
	}
	_, err := os.Lstat(p.socket)
	assert.True(t, errors.Is(err, os.ErrNotExist), "socket removed at exit: %v", err)
}

func TestHostRefusesOriginOutsideAllowlist(t *testing.T) {
	p := chromeStart(t, agentprototest.Echo, EnvAllowedOrigins+"=chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/")
	select {
	case err := <-p.done:
		assert.Error(t, err, "the host exits with an error")
		p.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("the host kept running for a refused origin")
	}
	assert.Contains(t, p.stderr.String(), "caller origin not allowed")
}

func TestInstallWritesManifestPointingAtTheBinary(t *testing.T) {
	profile := t.TempDir()
	out, err := exec.Command(hostBinary, "install", "--browser", "chromium", "--extension-id", extensionID, "--user-data-dir", profile).CombinedOutput()
	require.NoError(t, err, "%s", out)
	manifestPath := filepath.Join(profile, "NativeMessagingHosts", "com.weboperator.bridge.json")
	data, err := os.ReadFile(manifestPath)
	require.NoError(t, err)
	m, err := nativemsg.ParseManifest(data)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(hostBinary)
	require.NoError(t, err)
	assert.Equal(t, want, m.Path)
	assert.Equal(t, []string{"chrome-extension://" + extensionID + "/"}, m.AllowedOrigins)
	assert.Equal(t, "com.weboperator.bridge", m.Name)

	out, err = exec.Command(hostBinary, "uninstall", "--browser", "chromium", "--user-data-dir", profile).CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, err = os.Stat(manifestPath)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"install", "--browser", "chromium"},
		{"install", "--browser", "netscape", "--extension-id", extensionID},
		{"not-an-origin"},
	} {
		var stderr bytes.Buffer
		env := osEnv()
		env.Stderr, env.Stdout = &stderr, io.Discard
		assert.Equal(t, 2, run(t.Context(), args, env), "args %q", args)
		assert.NotEmpty(t, stderr.String())
	}
}

// freePort returns a loopback TCP port nobody listens on (for a moment).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// An open event stream on the HTTP API must not hold the host up when the
// browser closes the link: the agent server's shutdown ends the streams,
// and the host returns at once rather than after its grace period.
func TestHostExitsPromptlyWithAnEventStreamOpen(t *testing.T) {
	dir, err := os.MkdirTemp("", "woh")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "bridge.sock")
	port := freePort(t)
	vars := map[string]string{
		"WEBOPERATOR_API_TOKEN":    "test-token",
		"WEBOPERATOR_AGENT_SOCKET": socket,
		"WEBOPERATOR_BRIDGE_PORT":  strconv.Itoa(port),
	}
	hostEnd, browserEnd, err := nativemsg.OSPipe()
	require.NoError(t, err)
	ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{Handler: agentprototest.Echo})
	defer ext.Close()
	var stderr bytes.Buffer
	env := env{
		Getenv:        func(k string) string { return vars[k] },
		Stdout:        io.Discard,
		Stderr:        &stderr,
		Executable:    os.Executable,
		OpenLink:      func() (*nativemsg.Conn, error) { return hostEnd, nil },
		ListenAgents:  bridge.ListenUnix,
		ShutdownGrace: time.Minute,
	}
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), []string{nativemsg.ExtensionOrigin(extensionID)}, env)
	}()

	var resp *http.Response
	require.Eventually(t, func() bool {
		req, err := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("http://127.0.0.1:%d/v1/tasks/t1/events", port), nil)
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer test-token")
		resp, err = http.DefaultClient.Do(req)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, ": connected\n", line)

	ext.Vanish() // the browser closes the link
	select {
	case c := <-code:
		assert.Zero(t, c, "stderr: %s", &stderr)
	case <-time.After(10 * time.Second):
		t.Fatal("the host waited for the event stream instead of exiting")
	}
	_, err = os.Lstat(socket)
	assert.True(t, errors.Is(err, os.ErrNotExist), "socket removed at exit: %v", err)
}

// Local processes need no token to open connections to the HTTP API:
// a thousand idle ones, more than the host has file descriptors, must
// neither take the agent socket away nor keep a real request out
// (issue 10 items 3 and 4).
func TestIdleHTTPConnectionsDoNotLockClientsOut(t *testing.T) {
	port := freePort(t)
	p := chromeStartLimited(t, agentprototest.Echo, 256, "WEBOPERATOR_BRIDGE_PORT="+strconv.Itoa(port))
	c := p.dial(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	var idle []net.Conn
	defer func() {
		for _, nc := range idle {
			nc.Close()
		}
	}()
	for range 1000 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		idle = append(idle, nc)
	}
	// Wait until the host has taken in every connection: then (with the
	// fix) it has closed all but the newest idle ones, or (without) it
	// has run out of descriptors.
	probe := idle[len(idle)-1-httpapi.DefaultMaxUnauthConns]
	require.Eventually(t, func() bool {
		probe.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := probe.Read(make([]byte, 1))
		return !errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(p.stderr.String(), "too many open files")
	}, 10*time.Second, 50*time.Millisecond)

	// An agent already connected, and a new one, still get answers.
	var res json.RawMessage
	require.NoError(t, c.Call(t.Context(), agentproto.TypeClick, json.RawMessage(`{"ref":"@e1"}`), &res))
	assert.JSONEq(t, `{"ref":"@e1"}`, string(res))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c2, err := agentproto.Dial(ctx, p.socket, &agentproto.ClientOptions{Token: "test-token"})
	require.NoError(t, err, "the agent socket is still there")
	defer c2.Close()
	require.NoError(t, c2.Call(ctx, agentproto.TypeClick, json.RawMessage(`{"ref":"@e2"}`), &res))
	assert.JSONEq(t, `{"ref":"@e2"}`, string(res))

	// So does an HTTP client with the token.
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/browser/click", strings.NewReader(`{"ref":"@e3"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer test-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "an HTTP request gets through")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"@e3"`)
	assert.NotContains(t, p.stderr.String(), "too many open files")
}

// brokenListener fails every Accept with an error Serve cannot retry.
type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept: the listener broke for good")
}

// When the agent server stops for any reason but the host's own shutdown,
// the host logs it and exits with status 1 (the browser starts a new one
// when the extension reconnects), instead of living on without its
// socket (issue 10 item 3).
func TestHostExitsWhenTheAgentSocketFails(t *testing.T) {
	dir, err := os.MkdirTemp("", "woh")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	vars := map[string]string{
		"WEBOPERATOR_API_TOKEN":    "test-token",
		"WEBOPERATOR_AGENT_SOCKET": filepath.Join(dir, "bridge.sock"),
		"WEBOPERATOR_BRIDGE_PORT":  "0",
	}
	// In-memory, so that closing the host's end interrupts its read
	// (nativemsg.OSPipe's ends are in blocking mode: see issue 9).
	hostEnd, browserEnd := nativemsg.Pipe()
	ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{Handler: agentprototest.Echo})
	defer ext.Close()
	stderr := &syncbuf.Buffer{}
	e := env{
		Getenv:     func(k string) string { return vars[k] },
		Stdout:     io.Discard,
		Stderr:     stderr,
		Executable: os.Executable,
		OpenLink:   func() (*nativemsg.Conn, error) { return hostEnd, nil },
		ListenAgents: func(ctx context.Context, path string) (net.Listener, error) {
			l, err := bridge.ListenUnix(ctx, path)
			return brokenListener{l}, err
		},
	}
	code := make(chan int, 1)
	go func() { code <- run(context.Background(), []string{nativemsg.ExtensionOrigin(extensionID)}, e) }()
	select {
	case c := <-code:
		assert.Equal(t, 1, c)
	case <-time.After(10 * time.Second):
		ext.Vanish()
		<-code
		t.Fatalf("the host went on without its agent socket; its log:\n%s", stderr)
	}
	assert.Contains(t, stderr.String(), "agent socket failed")
	assert.Contains(t, stderr.String(), "the listener broke for good")
}
