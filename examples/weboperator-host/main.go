// Command weboperator-host is the native messaging host the WebOperator
// extension starts with chrome.runtime.connectNative("com.weboperator.bridge"):
// it joins the extension (on its standard input and output) to agents on
// the agent socket and to the HTTP compatibility API.
//
//	weboperator-host install --browser chromium --extension-id ID
//
// writes its manifest, so that the browser can start it.
//
// It is written as an example of embedding the SDK with its public API
// only: [bridge.NewHost] on [nativemsg.OpenStdio] for the browser link,
// [bridge.NewServer] with [bridge.ListenUnix] for agents,
// [httpapi.NewServer] for the HTTP API, [nativemsg.Install] for the
// manifest, and signal.NotifyContext for SIGTERM (the browser's way of
// stopping it). Copy it into your own CLI and change what you need:
// main.go reads the command line, host.go runs the host, install.go
// writes the manifest.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// EnvAllowedOrigins is this project's addition to the environment: a
// comma-separated allowlist of the extension origins the host serves
// ("chrome-extension://<id>/"). Empty means any origin the manifest lets
// start it.
const EnvAllowedOrigins = "WEBOPERATOR_ALLOWED_ORIGINS"

func main() {
	// The browser stops the host with SIGTERM (and closes its input when
	// the extension disconnects); Ctrl-C stops it in a terminal.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], osEnv())
	stop()
	os.Exit(code)
}

// env is what the command uses of its process, replaceable in tests.
type env struct {
	Getenv func(string) string
	Stdout io.Writer // install/uninstall messages (never used in host mode)
	Stderr io.Writer // logs
	// Executable returns the host binary's path (os.Executable).
	Executable func() (string, error)
	// OpenLink opens the connection to the browser (nativemsg.OpenStdio
	// with the host's buffering).
	OpenLink func() (*nativemsg.Conn, error)
	// ListenAgents opens the agent socket (bridge.ListenUnix).
	ListenAgents func(ctx context.Context, path string) (net.Listener, error)
	// ShutdownGrace bounds the wait for replies to flush at exit.
	// Zero means one second: the browser kills the host two seconds
	// after closing its input.
	ShutdownGrace time.Duration
}

// osEnv is the real process environment.
func osEnv() env {
	return env{
		Getenv:       os.Getenv,
		Stdout:       os.Stdout,
		Stderr:       os.Stderr,
		Executable:   os.Executable,
		OpenLink:     openStdio,
		ListenAgents: bridge.ListenUnix,
	}
}

const usage = `usage:
  weboperator-host                      run as the native messaging host (the browser starts it
                                        with chrome-extension://<id>/ as its argument)
  weboperator-host install --browser chromium|chrome|edge|brave|firefox --extension-id ID
                           [--user-data-dir DIR] [--system] [--force]
  weboperator-host uninstall --browser NAME [--user-data-dir DIR] [--system] [--force]

environment: WEBOPERATOR_API_TOKEN, WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE=1,
WEBOPERATOR_AGENT_SOCKET, WEBOPERATOR_BRIDGE_HOST, WEBOPERATOR_BRIDGE_PORT (0 disables the
HTTP API), WEBOPERATOR_ALLOWED_ORIGINS
`

// run runs the command with args (os.Args[1:]) and returns the exit code.
func run(ctx context.Context, args []string, env env) int {
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
