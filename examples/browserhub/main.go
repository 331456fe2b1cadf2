// Command browserhub embeds the extension bridge hub: it serves the browser
// extension on 127.0.0.1, keeps the panel's conversations and input history
// in a folder, and drives the browser with commands read from stdin, one per
// line (type help).
//
//	browserhub [--addr 127.0.0.1:52789] [--token T] [--dir DIR]
//
// The token comes from --token, else $BROWSERHUB_TOKEN; when neither is set
// a new one is made and printed, to be copied into the extension's options.
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
	"github.com/agentbridge/agentbridge/internal/browserhub"
)

func main() {
	addr := flag.String("addr", extbridge.DefaultAddr, "listen address (loopback only)")
	token := flag.String("token", "", "shared token (default $"+browserhub.TokenEnv+", else a new one is printed)")
	dir := flag.String("dir", defaultDir(), "folder for conversations, input history and artifacts")
	verbose := flag.Bool("v", false, "log hub diagnostics to stderr")
	flag.Parse()

	tok, generated, err := browserhub.ResolveToken(*token, os.Getenv(browserhub.TokenEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "browserhub:", err)
		os.Exit(1)
	}
	if generated {
		fmt.Println("token:", tok)
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = browserhub.Run(ctx, browserhub.Config{
		Addr: *addr, Token: tok, Dir: *dir, In: os.Stdin, Out: os.Stdout, Logger: logger,
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
