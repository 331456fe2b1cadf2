// Command batch discovers a site's WebAgents actions, then runs a workflow of them in one request.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"

	"github.com/agentbridge/agentbridge/safeprint"
	"github.com/agentbridge/agentbridge/webagents"
)

func main() {
	allowWrites := flag.Bool("allow-writes", false, "consent to actions that write")
	flag.Parse()
	ctx := context.Background()
	var c webagents.Client // its zero value works: timeouts, limits and redirects are bounded
	d, err := c.Discover(ctx, flag.Arg(0))
	if err != nil {
		log.Fatal(err) // a *webagents.DiscoveryError: absent, invalid, unsafe, unavailable, …
	}
	fmt.Println(d.Status, len(d.Actions), "actions")
	res, err := c.Run(ctx, d, []webagents.Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
	}, &webagents.RunOptions{AllowWrites: *allowWrites})
	if err != nil {
		log.Fatal(err) // ErrConsentRequired before anything is sent; a *webagents.Error from the site
	}
	fmt.Println(safeprint.Line(string(res.Response.Results["add"]))) // the site's data: untrusted
}
