package extbridge_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// A CLI's hub: bind, serve, wait for the browser extension, then drive the
// browser. The fake extension from extbridgetest plays the browser here; in
// real use the user's extension dials ws://127.0.0.1:52789/ws with the token.
func ExampleNewHub() {
	token := extbridge.NewToken() // the user copies it into the extension's options
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	l, err := hub.Listen() // a busy port is reported here, and Addr is valid after it
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hub.Serve(l) }()

	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop"})
	ext, err := extbridgetest.Dial(context.Background(), "ws://"+hub.Addr().String()+"/ws",
		&extbridgetest.Options{Token: token, Version: "1.2.3", Browser: browser})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hub.WaitConnected(ctx); err != nil { // until a browser_hello with the token
		log.Fatal(err)
	}
	info, _ := hub.Extension()
	fmt.Println("extension", info.Version, "connected")

	if _, err := hub.Navigate(ctx, "https://shop.example/"); err != nil {
		log.Fatal(err)
	}
	if _, err := hub.Type(ctx, "#q", "keyboard", &extbridge.TypeOptions{PressEnter: true}); err != nil {
		log.Fatal(err)
	}
	tabs, err := hub.Tabs(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tabs[0].Title, browser.Value("#q"), browser.Enters())

	if err := hub.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(<-served, extbridge.ErrServerClosed))
	// Output:
	// extension 1.2.3 connected
	// Shop keyboard [#q]
	// true
}
