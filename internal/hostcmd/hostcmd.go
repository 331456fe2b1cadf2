// Package hostcmd is the weboperator-host command: the native messaging
// host a browser starts for the WebOperator extension, joining it to the
// agent socket and the HTTP compatibility API, and the install and
// uninstall subcommands that write its manifest.
package hostcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// EnvAllowedOrigins is this project's addition to the environment: a
// comma-separated allowlist of the extension origins the host serves
// ("chrome-extension://<id>/"). Empty means any origin the manifest lets
// start it.
const EnvAllowedOrigins = "WEBOPERATOR_ALLOWED_ORIGINS"

// Env is what the command uses of its process, replaceable in tests.
type Env struct {
	Getenv func(string) string
	Stdout io.Writer // install/uninstall messages (never used in host mode)
	Stderr io.Writer // logs
	// Executable returns the host binary's path (os.Executable).
	Executable func() (string, error)
	// OpenLink opens the connection to the browser (nativemsg.OpenStdio
	// with the host's buffering).
	OpenLink func() (*nativemsg.Conn, error)
	// ShutdownGrace bounds the wait for replies to flush at exit.
	// Zero means one second: the browser kills the host two seconds
	// after closing its input.
	ShutdownGrace time.Duration
}

// OSEnv is the real process environment.
func OSEnv() Env {
	return Env{
		Getenv:     os.Getenv,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Executable: os.Executable,
		OpenLink:   OpenStdio,
	}
}

const usage = `usage:
  weboperator-host                      run as the native messaging host (the browser starts it
                                        with chrome-extension://<id>/ as its argument)
  weboperator-host install --browser chromium|chrome|edge|brave|firefox --extension-id ID
                           [--user-data-dir DIR] [--system]
  weboperator-host uninstall --browser NAME [--user-data-dir DIR] [--system]

environment: WEBOPERATOR_API_TOKEN, WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1,
WEBOPERATOR_AGENT_SOCKET, WEBOPERATOR_BRIDGE_HOST, WEBOPERATOR_BRIDGE_PORT (0 disables the
HTTP API), WEBOPERATOR_ALLOWED_ORIGINS
`

// Run runs the command with args (os.Args[1:]) and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if len(args) > 0 {
		switch args[0] {
		case "install":
			return install(args[1:], env, false)
		case "uninstall":
			return install(args[1:], env, true)
		case "help", "-h", "-help", "--help":
			fmt.Fprint(env.Stdout, usage)
			return 0
		}
	}
	var origin string
	if len(args) > 0 {
		info, err := nativemsg.ParseLaunchArgs(args)
		if err != nil {
			fmt.Fprintf(env.Stderr, "weboperator-host: %v\n%s", err, usage)
			return 2
		}
		origin = info.Origin
	}
	if err := serve(ctx, origin, env); err != nil {
		fmt.Fprintf(env.Stderr, "weboperator-host: %v\n", err)
		return 1
	}
	return 0
}

func install(args []string, env Env, remove bool) int {
	name := "install"
	if remove {
		name = "uninstall"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	browser := fs.String("browser", "", "chromium, chrome, edge, brave or firefox")
	extID := fs.String("extension-id", "", "the extension's id (Firefox: the add-on id)")
	userDataDir := fs.String("user-data-dir", "", "a browser profile directory given with --user-data-dir")
	system := fs.Bool("system", false, "install for every user (needs root)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *browser == "" || (!remove && *extID == "") {
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	b, err := nativemsg.ParseBrowser(*browser)
	if err != nil {
		fmt.Fprintf(env.Stderr, "weboperator-host: %v\n", err)
		return 2
	}
	scope := nativemsg.UserScope
	if *system {
		scope = nativemsg.SystemScope
	}
	loc, err := nativemsg.ManifestLocation(b, scope, agentproto.HostName, &nativemsg.LocationOptions{UserDataDir: *userDataDir})
	if err != nil {
		fmt.Fprintf(env.Stderr, "weboperator-host: %v\n", err)
		return 1
	}
	if remove {
		err = nativemsg.Uninstall(loc)
	} else {
		err = installManifest(b, *extID, loc, env)
	}
	var reg *nativemsg.RegistryError
	if err != nil && !errors.As(err, &reg) {
		fmt.Fprintf(env.Stderr, "weboperator-host: %v\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(env.Stdout, "%v\n", err) // the Windows registry step
	}
	verb := "installed"
	if remove {
		verb = "removed"
	}
	fmt.Fprintf(env.Stdout, "%s %s\n", verb, loc.ManifestPath)
	return 0
}

func installManifest(b nativemsg.Browser, extID string, loc *nativemsg.Location, env Env) error {
	exe, err := env.Executable()
	if err != nil {
		return fmt.Errorf("finding the host binary: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return fmt.Errorf("finding the host binary: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return fmt.Errorf("finding the host binary: %w", err)
	}
	m := &nativemsg.HostManifest{
		Name:        agentproto.HostName,
		Description: "WebOperator bridge: agents on a Unix socket to the WebOperator extension",
		Path:        exe,
		Type:        "stdio",
	}
	if b.Family() == nativemsg.FamilyFirefox {
		m.AllowedExtensions = []string{extID}
	} else {
		m.AllowedOrigins = []string{nativemsg.ExtensionOrigin(extID)}
	}
	return nativemsg.Install(m, loc)
}

// serve runs the host until the browser closes the link or ctx ends.
func serve(ctx context.Context, origin string, env Env) error {
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
	host := agentproto.NewHost(conn, &agentproto.HostOptions{CallerOrigin: origin, AllowedOrigins: allowed, Logger: log})
	srvOpts := cfg.ServerOptions()
	srvOpts.Extension = host
	srvOpts.Logger = log
	srv := agentproto.NewServer(srvOpts)

	// A server that stops for any reason but our shutdown ends the host
	// (logged, exit status 1): the browser then starts a fresh one when
	// the extension reconnects, rather than the host living on without
	// its socket.
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var wg sync.WaitGroup
	listenCtx, cancelListen := context.WithTimeout(ctx, 5*time.Second)
	l, err := agentproto.ListenUnix(listenCtx, cfg.SocketPath)
	cancelListen()
	if err != nil {
		log.Error("weboperator-host: agent socket unavailable", "err", err)
	} else {
		log.Info("weboperator-host: listening", "socket", cfg.SocketPath)
		wg.Go(func() {
			if err := srv.Serve(l); !errors.Is(err, agentproto.ErrServerClosed) {
				log.Error("weboperator-host: agent socket failed; exiting", "err", err)
				fail(fmt.Errorf("agent socket: %w", err))
			}
		})
	}

	var httpSrv *http.Server
	if cfg.HTTPPort != 0 {
		origins := append([]string{origin}, allowed...)
		httpSrv = agentproto.NewHTTPServer(srv.HTTPHandler(&agentproto.HTTPOptions{AllowedOrigins: origins}),
			&agentproto.HTTPServerOptions{Logger: log})
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
