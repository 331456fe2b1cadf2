// Package quickstart_test runs the README's four quick-start programs as a user would: each is
// built, started with its real peer (a bridge on a Unix socket, the extension dialling the hub,
// an agent calling the site), and its output checked.
package quickstart_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/browsertest"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// program is one quick start, started.
type program struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr strings.Builder
}

func start(t *testing.T, bin string, env []string, args ...string) *program {
	t.Helper()
	p := &program{cmd: exec.CommandContext(t.Context(), bin, args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.stdout = bufio.NewReader(out)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

func (p *program) line(t *testing.T) string {
	t.Helper()
	l, err := p.stdout.ReadString('\n')
	require.NoError(t, err, "stderr: %s", &p.stderr)
	return strings.TrimSuffix(l, "\n")
}

// rest reads the program's output to its end and waits for it to exit.
func (p *program) rest(t *testing.T) (string, error) {
	t.Helper()
	out, err := io.ReadAll(p.stdout)
	require.NoError(t, err)
	return string(out), p.cmd.Wait()
}

func build(t *testing.T, name string) string {
	if runtime.GOOS == "windows" {
		t.Skip("the quick starts are run on Unix: the agent's bridge is a Unix socket, the site stops on SIGINT")
	}
	return browsertest.BuildHost(t, "./"+name)
}

func TestAgent(t *testing.T) {
	bin := build(t, "agent")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	page := `{"kind":"snapshot","snapshot":{"url":"https://shop.example/","title":"Shop\u001b[2J","domHash":"d1",
		"takenAt":1,"viewport":{"width":1280,"height":800},"nodes":[{"ref":"@e1","role":"button","name":"Buy"}]}}`
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{
		Server: bridge.ServerOptions{Token: "quick-start-token"},
		Extension: agentprototest.Options{Handler: agentprototest.Mux{
			agentproto.TypeNavigate: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
				return map[string]any{"ok": true, "tabId": 1, "url": "https://shop.example/"}, nil
			}),
			agentproto.TypeSnapshot: agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
				return json.RawMessage(page), nil
			}),
		}},
	})
	defer b.Close()
	dir, err := os.MkdirTemp("", "qs") // Unix socket paths are short
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "bridge.sock")
	l, err := bridge.ListenUnix(ctx, socket)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- b.Server.Serve(l) }()
	defer func() { b.Close(); <-served }()

	p := start(t, bin, []string{agentproto.EnvSocket + "=" + socket, agentproto.EnvToken + "=quick-start-token"}, "https://shop.example/")
	out, err := p.rest(t)
	require.NoError(t, err, "stderr: %s", &p.stderr)
	assert.Equal(t, "Shop\\u001b[2J 1 nodes\n", out, "the page's title is printed with its control characters visible")
}

func TestHub(t *testing.T) {
	bin := build(t, "hub")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := start(t, bin, nil, "-addr", "127.0.0.1:0", "https://shop.example/")
	first := p.line(t) // hub on ADDR; paste this token into the extension's options: TOKEN
	addr, token, ok := strings.Cut(strings.TrimPrefix(first, "hub on "), "; paste this token into the extension's options: ")
	require.True(t, ok, "first line %q", first)

	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop"})
	ext, err := extbridgetest.Dial(ctx, "ws://"+addr+"/ws", &extbridgetest.Options{Token: token, Browser: browser})
	require.NoError(t, err)
	defer ext.Close()
	out, err := p.rest(t)
	require.NoError(t, err, "stderr: %s", &p.stderr)
	assert.Equal(t, "Shop https://shop.example/\n", out)
}

// TestSiteAndBatch runs the site, then the batch agent against it: refused
// without consent (nothing sent), run with it, and the site stops cleanly
// on an interrupt.
func TestSiteAndBatch(t *testing.T) {
	siteBin, batchBin := build(t, "site"), build(t, "batch")
	site := start(t, siteBin, nil, "-addr", "127.0.0.1:0")
	origin, ok := strings.CutPrefix(site.line(t), "serving ")
	require.True(t, ok)

	refused := start(t, batchBin, nil, origin+"/products/kbd-75")
	out, err := refused.rest(t)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "without -allow-writes the batch must fail: %v", err)
	assert.Equal(t, "found 2 actions\n", out)
	assert.Contains(t, refused.stderr.String(), "needs RunOptions.AllowWrites")

	ran := start(t, batchBin, nil, "-allow-writes", origin+"/products/kbd-75")
	out, err = ran.rest(t)
	require.NoError(t, err, "stderr: %s", &ran.stderr)
	assert.Equal(t, "found 2 actions\n{\"added\":true}\n", out)

	require.NoError(t, site.cmd.Process.Signal(os.Interrupt))
	out, err = site.rest(t)
	require.NoError(t, err, "the site stops cleanly on an interrupt; stderr: %s", &site.stderr)
	assert.Empty(t, out)
}
