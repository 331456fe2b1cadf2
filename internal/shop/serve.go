package shop

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve runs a shop on ln until ctx ends, then shuts down gracefully (at
// most 10 s) and returns nil. An empty opts.Origin becomes
// "http://<listener address>". ln is closed when Serve returns.
func Serve(ctx context.Context, ln net.Listener, opts Options) error {
	if opts.Origin == "" {
		opts.Origin = "http://" + ln.Addr().String()
	}
	s, err := New(opts)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if opts.Logger != nil {
		opts.Logger.InfoContext(ctx, "shop: serving", "origin", opts.Origin, "manifest", opts.Origin+"/webagents.md")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}
