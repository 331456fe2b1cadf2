// Command agent opens a page in the person's browser through the WebOperator bridge, and prints it.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/safeprint"
)

func main() {
	ctx := context.Background()
	c, err := agentproto.DialEnv(ctx, os.Getenv, nil) // $WEBOPERATOR_AGENT_SOCKET, $WEBOPERATOR_API_TOKEN
	if err != nil {
		log.Fatal(err) // no bridge running, a wrong token, a socket of another user (ErrForeignPeer)
	}
	defer c.Close()
	if _, err := c.Navigate(ctx, agentproto.NavigateParams{URL: os.Args[1]}); err != nil {
		log.Fatal(err) // errors.Is(err, agentproto.ErrExtensionOffline), ErrTimeout, ErrInvalidResult, …
	}
	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{}) // then c.Click, c.Type by ref
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(safeprint.Line(snap.Title), len(snap.Nodes), "nodes") // page text is untrusted: controls made visible
}
