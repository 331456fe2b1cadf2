package main

// The MCP step: agentbridge-mcp, the MCP server of the nested module mcp,
// driven over stdio. The root module does not depend on the
// MCP SDK, so the demo speaks MCP's newline-delimited JSON-RPC itself.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/internal/syncbuf"
)

// mcpStep builds agentbridge-mcp and lists and calls a tool of each source:
// the shop's actions (WebAgents), the embedded hub (a scripted extension from
// extbridgetest dials it, since the real one is connected to the demo's own
// hub) and, with the browser up, the bridge to the real extension.
func mcpStep(ctx context.Context, r *runner) (string, error) {
	if err := r.startShop(ctx); err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", skip("the go command is not on PATH, so the MCP server cannot be built")
	}
	root, err := moduleRoot(ctx, goTool)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "mcp")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", skip("the MCP server's module (mcp) is not in this checkout")
	}
	bin := filepath.Join(r.dir, "agentbridge-mcp")
	r.logf("building agentbridge-mcp (the nested module mcp, on the official MCP Go SDK)")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/agentbridge-mcp")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building agentbridge-mcp: %w: %s", err, lastLines(out, 5))
	}

	hubToken := randomHex(16)
	args := []string{"--site", r.shopURL + "/products", "--allow-writes", "--hub", "127.0.0.1:0"}
	env := append(os.Environ(), "AGENTBRIDGE_HUB_TOKEN="+hubToken)
	if r.browser != nil {
		args = append(args, "--bridge")
		env = append(env, agentproto.EnvSocket+"="+r.browser.socket, agentproto.EnvToken+"="+r.browser.token)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		stdin.Close() // end of stdin ends the server
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	c := &lineClient{in: stdin, out: bufio.NewReaderSize(stdout, 64<<10)}
	r.logf("agentbridge-mcp %s (stdio)", strings.Join(args, " "))

	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name, Version string }
	}
	if err := c.call(cctx, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "agentbridge-demo", "version": "1"}}, &init); err != nil {
		return "", err
	}
	if err := c.notify("notifications/initialized"); err != nil {
		return "", err
	}
	r.logf("initialize → %s %s, protocol %s", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := c.call(cctx, "tools/list", map[string]any{}, &list); err != nil {
		return "", err
	}
	names := make([]string, len(list.Tools))
	for i, t := range list.Tools {
		names[i] = t.Name
	}
	r.logf("tools/list → %d tools: %s", len(names), strings.Join(names, ", "))

	// WebAgents: one of the shop's actions, as a tool named after the
	// shop's host ("127.0.0.1_PORT_catalog.search").
	search := "catalog.search"
	for _, n := range names {
		if strings.HasSuffix(n, "_catalog.search") {
			search = n
		}
	}
	text, err := c.tool(cctx, search, map[string]any{"query": "wireless keyboard"})
	if err != nil {
		return "", err
	}
	r.logf("catalog.search → %s", oneLine(text))

	// The hub: a scripted extension dials the server's hub.
	addr, err := waitMatch(cctx, stderr, regexp.MustCompile(`msg="extension hub listening" addr=(\S+)`))
	if err != nil {
		return "", err
	}
	browser := extbridgetest.NewBrowser()
	browser.SetPage(r.shopURL+"/", extbridgetest.Page{Title: "agentbridge demo shop"})
	ext, err := extbridgetest.Dial(cctx, "ws://"+addr+"/ws", &extbridgetest.Options{Token: hubToken, Browser: browser})
	if err != nil {
		return "", fmt.Errorf("the scripted extension could not dial the MCP server's hub: %w", err)
	}
	defer ext.Close()
	if text, err = c.tool(cctx, "hub_navigate", map[string]any{"url": r.shopURL + "/"}); err != nil {
		return "", err
	}
	r.logf("hub_navigate (scripted extension on the server's hub) → %s", oneLine(text))
	summary := "tools/list, catalog.search (WebAgents), hub_navigate (hub)"

	// The bridge: the real extension in Chromium.
	if r.browser == nil {
		r.logf("bridge tools: not called, Chromium is not running")
		return summary + "; bridge not called without Chromium", nil
	}
	if text, err = c.tool(cctx, "browser_snapshot", map[string]any{}); err != nil {
		return "", err
	}
	var snap struct {
		Snapshot struct {
			Title string
			Nodes []json.RawMessage
		}
	}
	_ = json.Unmarshal([]byte(text), &snap)
	r.logf("browser_snapshot (the real extension, through the bridge) → %q, %d nodes", snap.Snapshot.Title, len(snap.Snapshot.Nodes))
	return summary + ", browser_snapshot (bridge)", nil
}

// moduleRoot is the folder of the main module the demo runs in.
func moduleRoot(ctx context.Context, goTool string) (string, error) {
	out, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", skip("not run inside the agentbridge module, so the MCP server cannot be built")
	}
	return filepath.Dir(gomod), nil
}

// lineClient is a minimal MCP client: one request at a time over
// newline-delimited JSON-RPC, skipping notifications.
type lineClient struct {
	in     io.Writer
	out    *bufio.Reader
	nextID int
}

func (c *lineClient) notify(method string) error {
	_, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	return err
}

func (c *lineClient) call(ctx context.Context, method string, params, result any) error {
	c.nextID++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	type reply struct {
		ID     *int            `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	id := c.nextID
	// Buffered: a reader left behind by a timeout ends at the server's
	// exit without blocking.
	lines := make(chan []byte, 1)
	readErr := make(chan error, 1)
	go func() {
		for {
			line, err := c.out.ReadBytes('\n')
			if err != nil {
				readErr <- err
				return
			}
			var rep reply
			if json.Unmarshal(line, &rep) == nil && rep.ID != nil && *rep.ID == id {
				lines <- line
				return
			}
		}
	}()
	select {
	case line := <-lines:
		var rep reply
		_ = json.Unmarshal(line, &rep)
		if rep.Error != nil {
			return fmt.Errorf("%s: error %d: %s", method, rep.Error.Code, rep.Error.Message)
		}
		return json.Unmarshal(rep.Result, result)
	case err := <-readErr:
		return fmt.Errorf("%s: the server's stdout: %w", method, err)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// tool calls a tool and returns its text; a result with isError is an error.
func (c *lineClient) tool(ctx context.Context, name string, args any) (string, error) {
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool `json:"isError"`
	}
	if err := c.call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, &res); err != nil {
		return "", err
	}
	var text []string
	for _, c := range res.Content {
		if c.Type == "text" {
			text = append(text, c.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", name, strings.Join(text, " "))
	}
	return strings.Join(text, "\n"), nil
}

// waitMatch waits until the buffer matches re and returns the first
// submatch.
func waitMatch(ctx context.Context, b *syncbuf.Buffer, re *regexp.Regexp) (string, error) {
	for {
		if m := re.FindStringSubmatch(b.String()); m != nil {
			return m[1], nil
		}
		select {
		case <-ctx.Done():
			return "", errors.New("agentbridge-mcp never said where its hub listens: " + oneLine(b.String()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
