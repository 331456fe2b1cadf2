package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// binary is the agentbridge-mcp command built once for the tests: every test
// runs it as a real process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentbridge-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "agentbridge-mcp")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building agentbridge-mcp:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// The SDK's stdio connection keeps a reader goroutine on the child's
		// stdout until the process is reaped; it ends with it.
		return goleakRun(m)
	}()
	os.Exit(code)
}

func goleakRun(m *testing.M) int {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// syncBuffer is a goroutine-safe buffer for a child's stderr that also lets a
// test wait for a line matching a pattern.
type syncBuffer struct {
	mu    sync.Mutex
	buf   strings.Builder
	added chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{added: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	select {
	case b.added <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitMatch waits until the buffer matches re and returns the first
// submatch.
func (b *syncBuffer) waitMatch(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m[1]
		}
		select {
		case <-b.added:
		case <-timeout:
			t.Fatalf("stderr never matched %s; stderr:\n%s", re, b.String())
		}
	}
}

// command returns the agentbridge-mcp process with args and extra
// environment (the socket defaults to a path that does not exist).
func command(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer) {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "WEBOPERATOR_AGENT_SOCKET="+filepath.Join(t.TempDir(), "absent.sock"))
	cmd.Env = append(cmd.Env, env...)
	stderr := newSyncBuffer()
	cmd.Stderr = stderr
	return cmd, stderr
}

// startStdio runs agentbridge-mcp with args and connects the go-sdk's client
// to it over its standard streams.
func startStdio(t *testing.T, opts *mcp.ClientOptions, env []string, args ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd, stderr := command(t, env, args...)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr:\n%s", stderr)
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

var httpURL = regexp.MustCompile(`msg="MCP streamable HTTP listening" url=(http://\S+/)`)

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

const httpToken = "test-http-token-0123456789"

// startHTTP runs agentbridge-mcp --http 127.0.0.1:0 with args and returns its
// URL.
func startHTTP(t *testing.T, env []string, args ...string) (string, *syncBuffer) {
	t.Helper()
	cmd, stderr := command(t, append(env, envHTTPToken+"="+httpToken), append([]string{"--http", "127.0.0.1:0"}, args...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return stderr.waitMatch(t, httpURL), stderr
}

// connectHTTP connects the go-sdk's client to url with the bearer token.
func connectHTTP(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: httpToken, next: tr}},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// transports runs fn once over stdio and once over streamable HTTP.
func transports(t *testing.T, env []string, args []string, opts *mcp.ClientOptions, fn func(t *testing.T, cs *mcp.ClientSession)) {
	t.Run("stdio", func(t *testing.T) {
		cs, _ := startStdio(t, opts, env, args...)
		fn(t, cs)
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTP(t, env, args...)
		fn(t, connectHTTP(t, url, opts))
	})
}

// call calls a tool and returns its result (protocol errors fail the test).
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "calling %s", name)
	return res
}

// text joins a result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolNames lists the server's tools by name.
func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

// lines reads r line by line into a channel, closed at EOF.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}
