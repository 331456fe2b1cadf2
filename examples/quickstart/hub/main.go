// Command hub embeds the extension bridge's hub, waits for the browser extension, and drives the browser.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/safeprint"
)

func main() {
	addr := flag.String("addr", extbridge.DefaultAddr, "the hub's loopback address")
	flag.Parse()
	ctx := context.Background()
	token := extbridge.NewToken() // or one the user keeps; the extension's options hold it
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{Addr: *addr})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	l, err := hub.Listen() // a busy port is reported here
	if err != nil {
		log.Fatal(err)
	}
	go hub.Serve(l)
	fmt.Printf("hub on %s; paste this token into the extension's options: %s\n", hub.Addr(), token)
	if err := hub.WaitConnected(ctx); err != nil { // until the extension says hello with the token
		log.Fatal(err)
	}
	page, err := hub.Navigate(ctx, flag.Arg(0)) // also Click, Type, Read, Screenshot, Tabs; chat, approvals
	if err != nil {
		log.Fatal(err) // errors.Is(err, extbridge.ErrNotConnected), ErrTimeout, ErrInvalidCommand, …
	}
	fmt.Println(safeprint.Line(page.Title), safeprint.Line(page.URL))
}
