package extbridgetest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// A program's hub, tested in memory: a scripted browser answers the
// commands, the fake panel approves every request, and the test drives the
// panel's side (a tool request, a list_models) itself.
func Example() {
	hub, err := extbridge.NewHub("extbridgetest-example-token", &extbridge.HubOptions{
		Tools: extbridge.ToolHandlerFunc(func(_ context.Context, req *extbridge.ToolRequest) (*extbridge.ToolResponse, error) {
			return &extbridge.ToolResponse{Success: true, Output: "ran " + req.ToolArgs}, nil
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://example.com/", extbridgetest.Page{Title: "Example Domain"})
	ctx := context.Background()
	ext, err := extbridgetest.Connect(ctx, hub, &extbridgetest.Options{
		Token:   "extbridgetest-example-token",
		Browser: browser,
		Approvals: extbridgetest.ApprovalHandlerFunc(func(context.Context, *extbridgetest.ApprovalRequest) string {
			return "approve"
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	res, err := hub.Navigate(ctx, "https://example.com/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.URL, res.Title)

	d, err := hub.RequestApproval(ctx, extbridge.ApprovalRequest{ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d)

	tr, err := ext.CallTool(ctx, "Bash", `{"command":"gh api user"}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tr.Success, tr.Output)

	models, err := ext.Request(ctx, "list_models", "models")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(models.Raw))
	// Output:
	// https://example.com/ Example Domain
	// approved
	// true ran {"command":"gh api user"}
	// {"type":"models","models":[],"current":""}
}
