package shop

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

// Site is the whole shop, wired as examples/webagents-shop wires it: the
// application's pages and the webagents handler on one mux. The demo and
// the tests use it to run the site in-process; the example is the
// documentation of the wiring.
type Site struct {
	app   *Shop
	agent *webagents.Handler
	mux   *http.ServeMux
}

// New builds the site; nil options mean the defaults.
func New(opts *Options) (*Site, error) {
	if opts == nil {
		opts = &Options{}
	}
	app, err := NewApp(opts)
	if err != nil {
		return nil, err
	}
	pacing := DefaultPacing
	if opts.Pacing != nil {
		pacing = *opts.Pacing
	}
	m, err := Manifest(pacing)
	if err != nil {
		return nil, err
	}
	var limiter webagents.Limiter
	if pacing.MinIntervalMs > 0 {
		limiter = &webagents.SessionLimiter{Interval: time.Duration(pacing.MinIntervalMs) * time.Millisecond}
	}
	agent, err := webagents.NewHandler(m, app.Actions(), &webagents.HandlerOptions{
		Origin:  app.origin,
		Context: app.AgentContext,
		Limiter: limiter,
		Logger:  opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	agent.Register(mux)
	mux.Handle("/", app)
	return &Site{app: app, agent: agent, mux: mux}, nil
}

// ServeHTTP serves the pages, the discovery documents and the endpoint.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// App returns the application.
func (s *Site) App() *Shop { return s.app }

// Store returns the service layer.
func (s *Site) Store() *Store { return s.app.store }

// Manifest returns the published manifest.
func (s *Site) Manifest() *webagents.Manifest { return s.agent.Manifest() }

// Agent returns the webagents handler.
func (s *Site) Agent() *webagents.Handler { return s.agent }

// Serve runs a site on ln until ctx ends, then shuts down gracefully (at
// most 10 s: running batches first, then connections) and returns nil. An
// empty opts.Origin becomes "http://<listener address>". ln is closed when
// Serve returns.
func Serve(ctx context.Context, ln net.Listener, opts *Options) error {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Origin == "" {
		o.Origin = "http://" + ln.Addr().String()
	}
	s, err := New(&o)
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
	if o.Logger != nil {
		o.Logger.InfoContext(ctx, "shop: serving", "origin", o.Origin, "manifest", o.Origin+"/webagents.md")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.agent.Close()
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = errors.Join(s.agent.Shutdown(shutdown), srv.Shutdown(shutdown))
	if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}
