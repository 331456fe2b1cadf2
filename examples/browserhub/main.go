// Command browserhub embeds the extension bridge hub (package extbridge):
// it serves the browser extension on 127.0.0.1, keeps the panel's
// conversations and input history in a folder, serves that folder's
// artifacts/ to the panel, answers approvals from the panel or the
// terminal, and drives the browser with commands read from stdin, one per
// line (type help).
//
//	browserhub [--addr 127.0.0.1:52789] [--token T] [--dir DIR] [--approval-timeout 5m] [-v]
//
// The token comes from --token, else $BROWSERHUB_TOKEN; when neither is set
// a new one is made and printed, to be copied into the extension's options.
// It serves classic extensions and protocol-2 ones (the newest opentask
// builds) alike; --dir is the project directory it reports and the one a
// protocol-2 extension's options must name. Panel messages are echoed back
// and answered with a short reply turn; the panel's tool requests reach a
// built-in Echo tool (tool_args {"text":T} → output T), which always asks
// for approval first.
//
// The files of this folder, each a part a CLI embedding the hub needs:
// main.go (flags, signals), hub.go (hub options, serving, the command loop,
// shutdown), backend.go (the panel's frames: conversations, history, mode,
// new chat, a reply turn), command.go (parsing stdin's commands), store.go
// (conversations on disk through os.Root).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agentbridge/agentbridge/extbridge"
)

func main() {
	addr := flag.String("addr", extbridge.DefaultAddr, "listen address (loopback only)")
	token := flag.String("token", "", "shared token (default $"+TokenEnv+", else a new one is printed)")
	dir := flag.String("dir", defaultDir(), "project directory: conversations, input history and artifacts live here, and protocol-2 extensions must name it as their project dir")
	approvalTimeout := flag.Duration("approval-timeout", DefaultApprovalTimeout, "how long approve? waits for an answer")
	verbose := flag.Bool("v", false, "log hub diagnostics to stderr")
	flag.Parse()

	tok, generated := ResolveToken(*token, os.Getenv(TokenEnv))
	if generated {
		fmt.Println("token:", tok)
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, Config{
		Addr: *addr, Token: tok, Dir: *dir, In: os.Stdin, Out: os.Stdout, Logger: logger,
		ApprovalTimeout: *approvalTimeout,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func defaultDir() string {
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "agentbridge", "browserhub")
	}
	return "browserhub-data"
}
