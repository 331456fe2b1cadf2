package mcptools_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/mcp/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server with the bridge's tools and one site's, over stdio: the package
// doc's quick start, which must stay a copy of this body (TestDocQuickStart).
// It is compiled, not run, since it takes over stdio.
func Example() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "my-agent-tools", Version: "0.1"}, nil)
	bridge := mcptools.NewBridgeDialerFromEnv(nil) // WEBOPERATOR_AGENT_SOCKET, WEBOPERATOR_API_TOKEN
	defer bridge.Close()
	mcptools.AddBridgeTools(server, bridge)
	mcptools.DiscoverSites(ctx, []string{"https://shop.example/"}, nil).AddTools(server)
	err := server.Run(ctx, &mcptools.CancelTransport{Transport: &mcptools.StdioTransport{In: os.Stdin, Out: os.Stdout}})
	if err != nil {
		log.Fatal(err)
	}
}

// An MCP server whose tools drive the browser extension connected to an
// embedded extension-bridge hub; here the extension is extbridgetest's fake,
// and client and server talk over the go-sdk's in-memory transports.
func ExampleAddHubTools() {
	ctx := context.Background()
	hub, err := extbridge.NewHub("mcptools-example-token", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop"})
	ext, err := extbridgetest.Connect(ctx, hub, &extbridgetest.Options{Token: "mcptools-example-token", Browser: browser})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "0.1"}, nil)
	mcptools.AddHubTools(server, hub, nil)
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "0.1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptools.ToolHubNavigate, Arguments: map[string]any{"url": "https://shop.example/"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output: false {"title":"Shop","url":"https://shop.example/"}
}
