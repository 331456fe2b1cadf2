package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
)

// serve runs the host until the browser closes the link or ctx ends.
func serve(ctx context.Context, origin string, env env) error {
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, cfgErr := agentproto.ConfigFromEnv(env.Getenv)
	if cfgErr != nil {
		log.Error("weboperator-host: configuration", "err", cfgErr)
		cfg.HTTPPort = 0
	}
	var allowed []string
	for _, o := range strings.Split(env.Getenv(EnvAllowedOrigins), ",") {
		if o = strings.TrimSpace(o); o != "" {
			allowed = append(allowed, o)
		}
	}
	if cfg.Token == "" && !cfg.AllowUnauthenticated {
		log.Warn("weboperator-host: " + agentproto.MsgTokenNotConfigured + "; every request will be refused")
	}

	conn, err := env.OpenLink()
	if err != nil {
		return fmt.Errorf("opening the browser link: %w", err)
	}
	host := bridge.NewHost(conn, &bridge.HostOptions{CallerOrigin: origin, AllowedOrigins: allowed, Logger: log})
	srv := bridge.NewServer(&bridge.ServerOptions{
		Token:                cfg.Token,
		AllowUnauthenticated: cfg.AllowUnauthenticated,
		Extension:            host,
		Logger:               log,
	})

	// A server that stops for any reason but our shutdown ends the host
	// (logged, exit status 1): the browser then starts a fresh one when
	// the extension reconnects, rather than the host living on without
	// its socket.
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var wg sync.WaitGroup
	listenCtx, cancelListen := context.WithTimeout(ctx, 5*time.Second)
	l, err := env.ListenAgents(listenCtx, cfg.SocketPath)
	cancelListen()
	if err != nil {
		log.Error("weboperator-host: agent socket unavailable", "err", err)
	} else {
		log.Info("weboperator-host: listening", "socket", cfg.SocketPath)
		wg.Go(func() {
			if err := srv.Serve(l); !errors.Is(err, bridge.ErrServerClosed) {
				log.Error("weboperator-host: agent socket failed; exiting", "err", err)
				fail(fmt.Errorf("agent socket: %w", err))
			}
		})
	}

	var httpSrv *http.Server
	if cfg.HTTPPort != 0 {
		origins := append([]string{origin}, allowed...)
		httpSrv = httpapi.NewServer(httpapi.NewHandler(srv, &httpapi.HandlerOptions{AllowedOrigins: origins}),
			&httpapi.ServerOptions{Logger: log})
		hl, err := net.Listen("tcp", cfg.HTTPAddr())
		if err != nil {
			log.Warn("weboperator-host: HTTP API unavailable", "err", err)
			httpSrv = nil
		} else {
			wg.Go(func() {
				if err := httpSrv.Serve(hl); !errors.Is(err, http.ErrServerClosed) {
					log.Error("weboperator-host: HTTP API failed; exiting", "err", err)
					fail(fmt.Errorf("HTTP API: %w", err))
				}
			})
		}
	}

	runErr := host.Run(ctx) // every pending request has failed when it returns
	grace := env.ShutdownGrace
	if grace <= 0 {
		grace = time.Second
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// The agent server first: it flushes the failures to agents, removes
	// the socket, and ends the HTTP API's event streams, which the HTTP
	// server's Shutdown would otherwise wait for until the grace ran out.
	srv.Shutdown(shutCtx)
	if httpSrv != nil {
		httpSrv.Shutdown(shutCtx)
		httpSrv.Close()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	log.Info("weboperator-host: link closed; exiting")
	return nil
}
