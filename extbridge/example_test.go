package extbridge_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// The hub serves on a loopback listener; here a scripted fake extension
// from extbridgetest plays the browser.
func Example() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go hub.Serve(l)

	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://example.com/", extbridgetest.Page{Title: "Example Domain", Text: map[string]string{"h1": "Example Domain"}})
	ext, err := extbridgetest.Dial(context.Background(), "ws://"+l.Addr().String()+"/ws", &extbridgetest.Options{
		Token: token, Browser: browser,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	ctx := context.Background()
	if err := hub.WaitConnected(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := hub.Navigate(ctx, "https://example.com/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.URL, res.Title)
	text, err := hub.Read(ctx, "h1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text.Content)
	_, err = hub.Read(ctx, "#nope")
	fmt.Println(err)
	// Output:
	// https://example.com/ Example Domain
	// Example Domain
	// browser extension failed to read: no element matches selector #nope
}

func ExampleNotConnectedError() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	_, err = hub.Tabs(context.Background())
	fmt.Println(err)
	// Output: no browser extension connected on port 52789
}

func ExampleTextMessageContent() {
	e := extbridge.TextMessageContent("msg-1", "Hello")
	b, _ := e.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg-1","delta":"Hello"}
}

func ExampleInputHistory() {
	h := extbridge.NewInputHistory()
	for _, s := range []string{" fix the tests ", "fix the tests", "", "line one\nline two"} {
		h.Add(s)
	}
	fmt.Printf("%q\n", h.Entries())
	// Output: ["fix the tests" "line one\nline two"]
}

// A Backend embeds BaseBackend and implements only what it has.
func ExampleBaseBackend() {
	type modelsOnly struct{ extbridge.BaseBackend }
	var b extbridge.Backend = modelsOnly{}
	convs, _ := b.ListConversations(context.Background())
	mode, _ := b.Mode(context.Background())
	fmt.Println(len(convs), mode)
	// Output: 0 standard
}

func ExampleToolHandlerFunc() {
	tools := extbridge.ToolHandlerFunc(func(ctx context.Context, req *extbridge.ToolRequest) (*extbridge.ToolResponse, error) {
		if req.ToolName != "Echo" {
			return nil, extbridge.ErrUnknownTool
		}
		return &extbridge.ToolResponse{Success: true, Output: req.ToolArgs}, nil
	})
	res, _ := tools.HandleTool(context.Background(), &extbridge.ToolRequest{ID: "1", ToolName: "Echo", ToolArgs: `{"x":1}`})
	fmt.Println(res.Success, res.Output)
	// Output: true {"x":1}
}

// Listen reports a busy port before serving, and Addr is valid after it.
// Commands the extension would misread are refused before they are sent.
func ExampleHub_Listen() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	l, err := hub.Listen() // "address already in use" is reported here
	if err != nil {
		log.Fatal(err)
	}
	go hub.Serve(l)
	fmt.Println("listening:", hub.Addr() != nil)

	ctx := context.Background()
	_, err = hub.Navigate(ctx, "https://example.com/")
	fmt.Println(errors.Is(err, extbridge.ErrNotConnected))
	_, err = hub.Navigate(ctx, "example.com")
	fmt.Println(errors.Is(err, extbridge.ErrInvalidCommand), err)
	// Output:
	// listening: true
	// true
	// true extbridge: invalid navigate command: URL is not absolute: it needs a scheme (allowed: http, https, file, about, data)
}

// A turn that asks for approval, with a protocol-2 extension: the run
// suspends on an interrupt, the panel resumes it, and the turn goes on as
// a new run. The same code drives a classic extension with an
// approval_request frame.
func ExampleTurn_RequestApproval() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ext, err := extbridgetest.Connect(context.Background(), hub, &extbridgetest.Options{
		Token: token, Protocol: 2,
		// The user approves in the panel.
		Approvals: extbridgetest.ApprovalHandlerFunc(func(context.Context, *extbridgetest.ApprovalRequest) string {
			return "approve"
		}),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()
	ctx := context.Background()
	err = hub.RunTurn(ctx, "conversation-1", "run-1", func(ctx context.Context, t *extbridge.Turn) error {
		d, err := t.RequestApproval(ctx, extbridge.ApprovalRequest{ID: "call-1", ToolName: "Bash", ToolArgs: `{"command":"ls"}`})
		if err != nil {
			return err
		}
		return t.Say(ctx, "m1", "the user "+d.String()+" it")
	})
	if err != nil {
		log.Fatal(err)
	}
	// The turn's last frame, then every event the panel received.
	if _, err := ext.NextOfType(ctx, "TEXT_MESSAGE_END"); err != nil {
		log.Fatal(err)
	}
	if _, err := ext.NextOfType(ctx, "RUN_FINISHED"); err != nil {
		log.Fatal(err)
	}
	var events []string
	for _, f := range ext.Received() {
		if f.IsEvent() {
			events = append(events, f.Type)
		}
	}
	fmt.Println(events)
	// Output:
	// [RUN_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END RUN_FINISHED RUN_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_FINISHED]
}
