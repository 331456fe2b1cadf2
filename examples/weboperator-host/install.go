package main

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// install writes (or, with remove, deletes) the host's manifest for a
// browser, where that browser looks for it.
func install(args []string, env env, remove bool) int {
	name := "install"
	if remove {
		name = "uninstall"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	browser := fs.String("browser", "", "chromium, chrome, edge, brave or firefox")
	extID := fs.String("extension-id", "", "the extension's id (Firefox: the add-on id)")
	userDataDir := fs.String("user-data-dir", "", "a browser profile directory given with --user-data-dir")
	system := fs.Bool("system", false, "install for every user (needs root or administrator)")
	force := fs.Bool("force", false, "Windows: replace or delete a registry key that points at another host's manifest")
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
		err = nativemsg.Uninstall(loc, &nativemsg.InstallOptions{Force: *force})
	} else {
		err = installManifest(b, *extID, loc, &nativemsg.InstallOptions{Force: *force}, env)
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

func installManifest(b nativemsg.Browser, extID string, loc *nativemsg.Location, opts *nativemsg.InstallOptions, env env) error {
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
	return nativemsg.Install(m, loc, opts)
}
