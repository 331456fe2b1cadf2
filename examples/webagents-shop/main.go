// Command webagents-shop serves a small WebAgents demo shop: HTML pages for
// people and the WebAgents endpoint for agents, on one service layer.
//
//	go run ./examples/webagents-shop --addr 127.0.0.1:8080
//	go run ./examples/webagents check http://127.0.0.1:8080/products/kbd-75
//
// It teaches the server adapter: how a site publishes its actions with
// webagents.NewHandler (manifest, session context, action handlers,
// pacing), routes them next to its own pages with Register, and shuts down
// without cutting running batches short. The shop itself (catalog,
// accounts, cart, orders, pages) is application code in the shop folder
// beside this file; in your site it is your own code. To start from this
// example, copy the whole folder into your module and change the shop
// import path to yours.
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

	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	origin := flag.String("origin", "", "public origin (default http://ADDR)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		err = run(ctx, ln, *origin, logger)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "webagents-shop:", err)
		stop()
		os.Exit(1)
	}
}

// run serves the shop on ln until ctx ends, then shuts down gracefully.
// ln is closed when it returns.
func run(ctx context.Context, ln net.Listener, origin string, logger *slog.Logger) error {
	defer ln.Close()
	if origin == "" {
		origin = "http://" + ln.Addr().String()
	}

	// The application: catalog, accounts, cart, orders and HTML pages.
	app, err := shop.NewApp(&shop.Options{Origin: origin, Logger: logger})
	if err != nil {
		return err
	}

	// The manifest publishes the actions and the pacing agents must keep;
	// the Limiter enforces that pacing across each session's batches too.
	pacing := shop.DefaultPacing
	manifest, err := shop.Manifest(pacing)
	if err != nil {
		return err
	}

	// The adapter: discovery documents and the batch endpoint, serving the
	// manifest with one webagents.ActionHandler per published action.
	agent, err := webagents.NewHandler(manifest, app.Actions(), &webagents.HandlerOptions{
		Origin: origin, // the one public origin; forwarded Host headers are never trusted
		Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
			// The site's own session: the actions read it from the context.
			// Its key scopes pacing. A session any visitor gets without
			// signing in is anonymous: it is paced (and its stored responses
			// charged) by client address as well, so a fresh cookie per batch
			// does not escape pacing.
			sess := app.AgentSession(w, r)
			ctx := shop.WithAgentSession(r.Context(), sess)
			// Idempotency-Keys are scoped by the cookie as presented, also
			// when it no longer resolves: a sign-in replaces the cookie
			// (reporting the new one with webagents.CredentialReplaced), and
			// the retry of a keyed batch that signed in carries the old one.
			if c := sess.Credential(); c != "" {
				ctx = webagents.WithCredential(ctx, c)
			}
			switch {
			case sess.Key() == "":
				return ctx, nil // no session: scoped by client address
			case sess.SignedIn():
				return webagents.WithSessionKey(ctx, sess.Key()), nil
			default:
				return webagents.WithAnonymousSessionKey(ctx, sess.Key()), nil
			}
		},
		Limiter: &webagents.SessionLimiter{Interval: time.Duration(pacing.MinIntervalMs) * time.Millisecond},
		Logger:  logger, // failures reported to agents as "internal" are logged here
	})
	if err != nil {
		return err
	}

	// One mux: /webagents.md, /.well-known/webagents.json and the endpoint
	// go to the adapter, everything else to the pages.
	mux := http.NewServeMux()
	agent.Register(mux)
	mux.Handle("/", app)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	logger.InfoContext(ctx, "shop: serving", "origin", origin, "manifest", origin+"/webagents.md")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		agent.Close()
		return err
	case <-ctx.Done():
	}

	// A batch that has started runs to completion (or its deadline) even
	// if its client goes away; give running batches time to finish, then
	// close the connections.
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = errors.Join(agent.Shutdown(shutdown), srv.Shutdown(shutdown))
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}
