// Command extension writes the project's reference browser extension,
// unpacked, to a folder, and prints its id and how to load it, so that a
// real Chromium-based browser can be driven through your own native
// messaging host, your own extension bridge hub, or both:
//
//	go run ./examples/extension -out DIR [-native-host NAME | -no-native] [-hub 127.0.0.1:PORT]
//
// With -hub the token comes from -hub-token, else $BROWSERHUB_TOKEN (as
// examples/browserhub reads it). The extension's id is fixed by its
// manifest's key, so a host manifest can name it before the browser ever
// loaded it. -out must be a new or empty folder, or one this command wrote
// before (it is then rewritten: a loaded extension picks up the new
// config.json at its next reconnect).
//
// It uses the public API only: [extension.Write] and [extension.ID].
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/extension"
)

// TokenEnv is the environment variable the hub token is read from, the
// one examples/browserhub reads too.
const TokenEnv = "BROWSERHUB_TOKEN"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run runs the command with args (os.Args[1:]) and returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("extension", flag.ContinueOnError)
	flags.SetOutput(stderr)
	out := flags.String("out", "", "the folder to write the unpacked extension to (required)")
	nativeHost := flags.String("native-host", agentproto.HostName, "the native messaging host the extension starts")
	noNative := flags.Bool("no-native", false, "turn the native messaging side off")
	hub := flags.String("hub", "", "the extension bridge hub's address, 127.0.0.1:PORT (default: that side off)")
	hubToken := flags.String("hub-token", "", "the hub's token (default $"+TokenEnv+"; the environment keeps it out of ps)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *out == "" || flags.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: extension -out DIR [-native-host NAME | -no-native] [-hub 127.0.0.1:PORT [-hub-token T]]")
		return 2
	}
	opts := &extension.Options{NativeHost: *nativeHost, DisableNative: *noNative}
	if *hub != "" {
		port, err := hubPort(*hub)
		if err != nil {
			fmt.Fprintln(stderr, "extension:", err)
			return 2
		}
		opts.HubPort = port
		if opts.HubToken = *hubToken; opts.HubToken == "" {
			opts.HubToken = getenv(TokenEnv)
		}
		if opts.HubToken == "" {
			fmt.Fprintf(stderr, "extension: -hub needs the hub's token: set $%s or -hub-token\n", TokenEnv)
			return 2
		}
	}
	dir, err := filepath.Abs(*out)
	if err == nil {
		err = checkOut(dir)
	}
	if err == nil {
		err = extension.Write(dir, opts)
	}
	if err != nil {
		fmt.Fprintln(stderr, "extension:", err)
		return 1
	}
	printHowToLoad(stdout, dir, opts)
	return 0
}

// hubPort returns the port of a hub address. The extension dials
// ws://127.0.0.1:<port>/ws, so the host must be the loopback address.
func hubPort(addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("-hub %q: %w", addr, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		return 0, fmt.Errorf("-hub %q: the extension dials 127.0.0.1 only", addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("-hub %q: not a TCP port", addr)
	}
	return port, nil
}

// checkOut refuses a folder that holds anything but an earlier output of
// this command: Write replaces the extension's files wherever it is told.
func checkOut(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range []string{"manifest.json", "config.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is not empty and holds no extension written by this command", dir)
		}
	}
	return nil
}

func printHowToLoad(w io.Writer, dir string, opts *extension.Options) {
	profile := dir + "-profile"
	fmt.Fprintf(w, "wrote the reference extension %s to %s\n", extension.Version, dir)
	fmt.Fprintf(w, "extension id: %s\n", extension.ID)
	if opts.DisableNative {
		fmt.Fprintln(w, "native messaging: off")
	} else {
		fmt.Fprintf(w, "native messaging: it starts the host %s, whose manifest must allow %s; for the example host:\n",
			opts.NativeHost, extension.NativeOrigin)
		fmt.Fprintf(w, "  weboperator-host install --browser chromium --extension-id %s --user-data-dir %s\n",
			extension.ID, shellQuote(profile))
	}
	if opts.HubPort == 0 {
		fmt.Fprintln(w, "extension bridge: off")
	} else {
		fmt.Fprintf(w, "extension bridge: it dials ws://127.0.0.1:%d/ws with the token, sent as Origin %s\n",
			opts.HubPort, extension.Origin)
	}
	fmt.Fprintln(w, "load it into a browser profile made for tests: the extension obeys whoever holds its native port or hub token, on every page")
	fmt.Fprintf(w, "  chromium --user-data-dir=%s --load-extension=%s\n", shellQuote(profile), shellQuote(dir))
	fmt.Fprintf(w, "or open chrome://extensions, turn on Developer mode, click Load unpacked and choose %s\n", dir)
	fmt.Fprintln(w, "(Google Chrome ignores --load-extension since version 137: use Load unpacked there)")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
