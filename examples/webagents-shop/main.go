// Command webagents-shop serves a small WebAgents demo shop: HTML pages for
// people and the WebAgents endpoint for agents, on one service layer.
//
//	go run ./examples/webagents-shop --addr 127.0.0.1:8080
//	go run ./examples/webagents check http://127.0.0.1:8080/products/kbd-75
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/shop"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	origin := flag.String("origin", "", "public origin (default http://ADDR)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
		err = shop.Serve(ctx, ln, shop.Options{Origin: *origin, Logger: logger})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webagents-shop:", err)
		stop()
		os.Exit(1)
	}
}
