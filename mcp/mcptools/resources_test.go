package mcptools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/agentbridge/agentbridge/webagents"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// captureServer is a server with a screenshot and a snapshot tool of the
// bridge's names, each result numbered, and the capture resources.
func captureServer(t *testing.T, opts *CaptureOptions) (*mcp.Server, *Captures) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{ListChanged: true}},
	})
	n := 0
	server.AddTool(&mcp.Tool{Name: tools.BrowserScreenshot, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n++
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{Data: []byte{0xff, 0xd8, byte(n)}, MIMEType: "image/jpeg"},
				&mcp.TextContent{Text: "shot"},
			}}, nil
		})
	server.AddTool(&mcp.Tool{Name: tools.BrowserSnapshot, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "page text"}},
				StructuredContent: map[string]any{"url": "https://x.example/", "elements": []any{}}}, nil
		})
	return server, AddCaptureResources(server, opts)
}

func connectAt(t *testing.T, server *mcp.Server, version string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func resourceLink(res *mcp.CallToolResult) *mcp.ResourceLink {
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			return l
		}
	}
	return nil
}

// TestCaptureResources: screenshots and snapshots are kept as resources,
// linked from their results, bounded in count with the oldest dropped (and
// reading a dropped one is "resource not found", not an error without a
// code).
func TestCaptureResources(t *testing.T) {
	server, captures := captureServer(t, &CaptureOptions{MaxCaptures: 2})
	cs := connectAt(t, server, "2025-11-25")
	var links []*mcp.ResourceLink
	for range 3 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserScreenshot, Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Len(t, res.Content, 3, "the image, the text and the link")
		assert.IsType(t, &mcp.ImageContent{}, res.Content[0], "the image stays by default")
		link := resourceLink(res)
		require.NotNil(t, link)
		assert.Equal(t, "image/jpeg", link.MIMEType)
		assert.Equal(t, int64(3), *link.Size)
		links = append(links, link)
	}
	assert.Equal(t, CaptureURIPrefix+"1", links[0].URI)

	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: links[2].URI})
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	assert.Equal(t, []byte{0xff, 0xd8, 3}, read.Contents[0].Blob)
	assert.Equal(t, "image/jpeg", read.Contents[0].MIMEType)

	// The oldest is dropped: not listed, and not found.
	var listed []string
	for r, err := range cs.Resources(t.Context(), nil) {
		require.NoError(t, err)
		listed = append(listed, r.URI)
	}
	assert.ElementsMatch(t, []string{links[1].URI, links[2].URI}, listed)
	_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: links[0].URI})
	var werr *jsonrpc.Error
	require.True(t, errors.As(err, &werr), "%v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)

	// A snapshot is kept as its structured content.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserSnapshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	link := resourceLink(res)
	require.NotNil(t, link)
	assert.Equal(t, "application/json", link.MIMEType)
	read, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	assert.JSONEq(t, `{"url":"https://x.example/","elements":[]}`, read.Contents[0].Text)
	assert.Equal(t, 2, captures.Len())
}

// TestCaptureResourceBytes: the byte bound drops the oldest too, and a
// capture larger than it is not kept (its result has no link).
func TestCaptureResourceBytes(t *testing.T) {
	server, captures := captureServer(t, &CaptureOptions{MaxBytes: 7})
	cs := connectAt(t, server, "2025-11-25")
	for range 3 {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserScreenshot, Arguments: map[string]any{}})
		require.NoError(t, err)
	}
	assert.Equal(t, 2, captures.Len())
	assert.Equal(t, 6, captures.Bytes())
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserSnapshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Nil(t, resourceLink(res), "a snapshot over the byte bound is not kept")
	assert.Equal(t, 2, captures.Len())
}

// TestCaptureLinksOnly: with LinksOnly the image leaves the result for
// clients that have resource links; older ones get the image and no link.
func TestCaptureLinksOnly(t *testing.T) {
	server, _ := captureServer(t, &CaptureOptions{LinksOnly: true})
	res, err := connectAt(t, server, "2025-06-18").CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserScreenshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, res.Content, 2)
	assert.IsType(t, &mcp.TextContent{}, res.Content[0])
	assert.NotNil(t, resourceLink(res))

	res, err = connectAt(t, server, "2025-03-26").CallTool(t.Context(), &mcp.CallToolParams{Name: tools.BrowserScreenshot, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, res.Content, 2)
	assert.IsType(t, &mcp.ImageContent{}, res.Content[0])
	assert.Nil(t, resourceLink(res))
}

// TestSiteResources: webagents_status and each site's manifest are
// resources; the manifest is marked as the site's.
func TestSiteResources(t *testing.T) {
	page := startShop(t)
	sites := DiscoverSites(t.Context(), []string{page, "http://127.0.0.1:1/"}, nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sites.AddTools(server)
	sites.AddResources(server)
	cs := connect(t, server)
	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: SiteStatusURI})
	require.NoError(t, err)
	var status siteStatusOut
	require.NoError(t, json.Unmarshal([]byte(read.Contents[0].Text), &status))
	require.Len(t, status.Sites, 2)
	assert.Equal(t, webagents.DiscoveryFound, status.Sites[0].Status)
	assert.Equal(t, webagents.DiscoveryUnavailable, status.Sites[1].Status)
	assert.Contains(t, read.Contents[0].Text, `"status":"found"`, "a status is its text")

	read, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: SiteManifestURIPrefix + "1/manifest"})
	require.NoError(t, err)
	text := read.Contents[0].Text
	assert.Contains(t, text, siteDataOpen)
	assert.Contains(t, text, `"catalog.search"`)

	_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: SiteManifestURIPrefix + "2/manifest"})
	var werr *jsonrpc.Error
	require.True(t, errors.As(err, &werr), "%v", err)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
	assert.Contains(t, werr.Message, "127.0.0.1:1")
}

// TestErrorCodes: an error without a JSON-RPC code (a handler's plain error,
// the SDK's own "duplicate initialize") gets one; code 0 never goes out.
func TestErrorCodes(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	AddErrorCodes(server)
	server.AddTool(&mcp.Tool{Name: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("plain failure")
		})
	in, out := newPipes(t, server)
	send := func(line string) map[string]any {
		t.Helper()
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(<-out), &m))
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	m := send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	assert.Equal(t, float64(jsonrpc.CodeInvalidRequest), m["error"].(map[string]any)["code"], "%v", m)
	m = send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fails","arguments":{}}}`)
	assert.Equal(t, float64(jsonrpc.CodeInternalError), m["error"].(map[string]any)["code"], "%v", m)
	assert.Equal(t, "plain failure", m["error"].(map[string]any)["message"])
}

// newPipes runs server over a StdioTransport on pipes: lines in, lines out.
func newPipes(t *testing.T, server *mcp.Server) (io.WriteCloser, <-chan string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.Run(context.Background(), &StdioTransport{In: inR, Out: outW})
		outW.Close()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		<-done
		for range lines {
		}
	})
	return inW, lines
}
