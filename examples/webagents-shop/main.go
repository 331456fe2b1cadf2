// Command webagents-shop serves a small WebAgents demo shop: HTML pages for
// people and the WebAgents endpoint for agents, on one service layer.
//
//	go run ./examples/webagents-shop --addr 127.0.0.1:8080
//	go run ./examples/webagents check http://127.0.0.1:8080/products/kbd-75
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/shop"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	origin := flag.String("origin", "", "public origin (default http://ADDR)")
	flag.Parse()
	if err := serve(*addr, *origin); err != nil {
		fmt.Fprintln(os.Stderr, "webagents-shop:", err)
		os.Exit(1)
	}
}

func serve(addr, origin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if origin == "" {
		origin = "http://" + ln.Addr().String()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := shop.New(shop.Options{Origin: origin, Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	logger.Info("serving", "origin", origin, "manifest", origin+"/webagents.md")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
