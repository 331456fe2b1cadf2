// Command site serves its WebAgents actions to agents with a webagents.Handler, beside its own pages.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"

	"github.com/agentbridge/agentbridge/webagents"
)

const manifest = `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},"actions":{"cart.add":{"effect":"write"},
	"catalog.find":{"inputSchema":{"type":"object","properties":{"query":{"type":"string"}}}}}}`

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "where to listen")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	m, err := webagents.ParseManifest([]byte(manifest), nil)
	if err != nil {
		log.Fatal(err) // a *webagents.ValidationError: every problem, with its JSON path
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	origin := "http://" + l.Addr().String() // in production: "https://shop.example"
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			return map[string]string{"productId": "kbd-75"}, nil // req.Decode reads the input, valid against inputSchema
		}),
		"cart.add": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]bool{"added": true}, nil
		}),
	}, &webagents.HandlerOptions{Origin: origin}) // also sessions, pacing, idempotency
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux() // the site's own pages go here too
	h.Register(mux)           // /webagents.md, /.well-known/webagents.json and the endpoint
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	fmt.Println("serving", origin)
	<-ctx.Done()
	h.Shutdown(context.Background()) // running batches finish, then the server
	srv.Shutdown(context.Background())
}
