package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/npmtest"
)

// nodeClients is testdata/node installed: the TypeScript SDK's client
// (@modelcontextprotocol/sdk), the official conformance suite
// (@modelcontextprotocol/conformance), both pinned by its package-lock.json,
// and Node 22 from npm's node package (the suite needs it). It is installed
// by npm into a cache folder named after the lock file's hash, once per
// machine. Without node or npm the tests skip, or fail when CI is set.
type nodeClients struct {
	dir  string
	node string // Node 22
}

func newNodeClients(t *testing.T) *nodeClients {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatalf("the Node MCP clients are unavailable in CI: %s", msg)
		}
		t.Skipf("the Node MCP clients are unavailable (%s): install Node and npm to run this test", msg)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("no npm")
	}
	dir, err := installNode(npm)
	if err != nil {
		unavailable("%v", err)
	}
	return &nodeClients{dir: dir, node: filepath.Join(dir, "node_modules", ".bin", "node")}
}

// installNode installs testdata/node into its cache folder: npm ci without
// install scripts, then the node package's own (which fetches the Node 22
// binary of this platform).
func installNode(npm string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir, err := npmtest.Install(ctx, npm, filepath.Join("testdata", "node"), "mcp-clients",
		[]string{"package.json", "package-lock.json", "client.mjs"}, []string{"rebuild", "node"})
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "node"), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "v22.") {
		return "", fmt.Errorf("npm's node package gave no Node 22 (%q, %v)", out, err)
	}
	return dir, nil
}

// run runs a Node script of the folder and returns its standard output, or
// fails the test with its output.
func (n *nodeClients) run(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.node, args...)
	cmd.Dir = n.dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// TestTypeScriptClient: the TypeScript SDK's client, over stdio and over
// streamable HTTP, lists and calls the bridge's tools (a screenshot linked
// as a resource and read back), sets a logging level and gets -32602 for an
// unknown tool.
func TestTypeScriptClient(t *testing.T) {
	n := newNodeClients(t)
	path := socketPath(t)
	startBridge(t, path, newStandIn(), nil)
	env := append(bridgeEnv(path, bridgeToken), "WEBOPERATOR_AGENT_SOCKET="+path)
	t.Run("stdio", func(t *testing.T) {
		out := n.run(t, env, "client.mjs", "stdio", binary)
		assert.Contains(t, out, `"tools":10`)
	})
	t.Run("http", func(t *testing.T) {
		url, _ := startHTTP(t, bridgeEnv(path, bridgeToken))
		out := n.run(t, []string{envHTTPToken + "=" + httpToken}, "client.mjs", "http", url)
		assert.Contains(t, out, `"tools":10`)
	})
}

// TestConformance runs the official MCP conformance suite's server
// scenarios that apply to a tools server against agentbridge-mcp --http.
// The suite sends no bearer token, so a loopback proxy adds it, passing the
// Host header on unchanged; --allow-origin admits the proxy's own origin,
// which the DNS-rebinding scenario expects to be accepted (every other
// Origin is refused, as by default).
func TestConformance(t *testing.T) {
	n := newNodeClients(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// 127.0.0.1, not localhost: Node may try ::1 first, where the proxy
	// does not listen, and a loaded machine can make that a timeout.
	proxyURL := "http://" + ln.Addr().String() + "/"
	path := socketPath(t)
	startBridge(t, path, newStandIn(), nil)
	server, serverLog := startHTTP(t, bridgeEnv(path, bridgeToken), "-v", "--allow-origin", strings.TrimSuffix(proxyURL, "/"))
	target, err := url.Parse(server)
	require.NoError(t, err)
	proxy := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+httpToken)
		},
		FlushInterval: -1,
	}}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })

	suite := filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, scenario := range []string{
		"server-initialize", "ping", "tools-list", "logging-set-level",
		"server-sse-polling", "server-sse-multiple-streams", "dns-rebinding-protection",
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the server's log (-v):\n%s", serverLog)
				}
			})
			out := n.run(t, nil, suite, "server", "--url", proxyURL, "--scenario", scenario)
			assert.Regexp(t, `Passed: \d+/\d+, 0 failed`, out)
			t.Logf("%s", out)
		})
	}
}
