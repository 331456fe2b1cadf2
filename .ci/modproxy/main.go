// Command modproxy writes a module, from a directory, into a file-system
// module proxy (the layout GOPROXY=file://DIR reads: DIR/<path>/@v/list,
// <version>.info, .mod and .zip), so that a module can be resolved at a
// version that has not been published yet. The zip is made by
// golang.org/x/mod/zip, as for a tag: nested modules, vendor folders and
// invalid files are left out.
//
// Usage:
//
//	modproxy -dir MODULE_DIR -version VERSION -out PROXY_DIR
//	modproxy -require MODULE_PATH GO_MOD_FILE
//
// The second form prints the version at which a go.mod requires a module
// (nothing if it does not), for the release check's scripts.
//
// It is a module of its own so that golang.org/x/mod stays out of the
// agentbridge module's requirements; run it with GOWORK=off.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the module's root folder (holding its go.mod)")
	version := flag.String("version", "", "the version to publish it at")
	out := flag.String("out", "", "the proxy's root folder")
	require := flag.String("require", "", "print the version at which the go.mod given as argument requires this module path")
	flag.Parse()
	var err error
	if *require != "" {
		err = printRequire(*require, flag.Args())
	} else {
		err = write(*dir, *version, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func printRequire(path string, args []string) error {
	if len(args) != 1 {
		return errors.New("-require takes one go.mod file")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	f, err := modfile.ParseLax(args[0], data, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			fmt.Println(r.Mod.Version)
		}
	}
	return nil
}

func write(dir, version, out string) error {
	if dir == "" || version == "" || out == "" {
		return errors.New("-dir, -version and -out are required")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q is not a canonical semantic version", version)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return fmt.Errorf("%s/go.mod names no module", dir)
	}
	m := module.Version{Path: path, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	at := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(z, m, dir); err != nil {
		z.Close()
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		version + ".info": info,
		version + ".mod":  gomod,
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
