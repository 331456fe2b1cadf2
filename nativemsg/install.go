package nativemsg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// Browser names a browser whose native messaging hosts this package can
// install.
type Browser string

// The browsers ManifestLocation knows.
const (
	Chrome   Browser = "chrome"
	Chromium Browser = "chromium"
	Edge     Browser = "edge"
	Brave    Browser = "brave"
	Firefox  Browser = "firefox"
)

// Browsers returns every Browser this package knows, in a stable order:
// Chrome, Chromium, Edge, Brave, Firefox. Each call returns a new slice.
func Browsers() []Browser { return []Browser{Chrome, Chromium, Edge, Brave, Firefox} }

// ParseBrowser returns the Browser named s (case-insensitive).
func ParseBrowser(s string) (Browser, error) {
	for _, b := range Browsers() {
		if strings.EqualFold(s, string(b)) {
			return b, nil
		}
	}
	return "", fmt.Errorf("nativemsg: unknown browser %q (want one of chrome, chromium, edge, brave, firefox)", s)
}

// Family reports whether b is a Chromium or a Firefox browser.
func (b Browser) Family() Family {
	if b == Firefox {
		return FamilyFirefox
	}
	return FamilyChromium
}

// Scope is who a host manifest is installed for.
type Scope int

const (
	// UserScope installs for the current user, with no privileges needed.
	UserScope Scope = iota
	// SystemScope installs for every user of the machine (root or
	// administrator needed to write there).
	SystemScope
)

// LocationOptions adjusts where ManifestLocation looks. The zero value
// describes the running system.
type LocationOptions struct {
	// GOOS is the operating system whose layout is used; "" means
	// runtime.GOOS. "linux", "darwin" and "windows" are known; other Unix
	// systems use the Linux layout.
	GOOS string
	// HomeDir is the user's home directory; "" means os.UserHomeDir().
	HomeDir string
	// UserDataDir is a browser profile directory given with
	// --user-data-dir. When set, a Chromium browser reads user-level host
	// manifests from <UserDataDir>/NativeMessagingHosts, whatever the OS;
	// Scope is then ignored. Firefox has no such directory.
	UserDataDir string
	// WindowsDir is the directory the manifest file is written to on
	// Windows, where the registry, not the directory, makes it known.
	// "" means %LOCALAPPDATA%\<host name> (user scope) or
	// %ProgramData%\<host name> (system scope).
	WindowsDir string
}

// Location is where a browser looks for one host's manifest.
type Location struct {
	Browser Browser
	Scope   Scope
	// Dir is the directory holding the manifest file.
	Dir string
	// ManifestPath is the manifest file: Dir/<host name>.json.
	ManifestPath string
	// RegistryKey is set on Windows only: the key whose default value must
	// be ManifestPath for the browser to find the host, such as
	// HKCU\Software\Google\Chrome\NativeMessagingHosts\<host name>.
	RegistryKey string
}

// ManifestLocation returns where browser b reads the manifest of the host
// called name, for the given scope. opts may be nil.
func ManifestLocation(b Browser, scope Scope, name string, opts *LocationOptions) (*Location, error) {
	var o LocationOptions
	if opts != nil {
		o = *opts
	}
	if _, err := ParseBrowser(string(b)); err != nil {
		return nil, err
	}
	if !hostName.MatchString(name) {
		return nil, fmt.Errorf("nativemsg: invalid host name %q", name)
	}
	if scope != UserScope && scope != SystemScope {
		return nil, fmt.Errorf("nativemsg: unknown scope %d", scope)
	}
	goos := o.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	loc := &Location{Browser: b, Scope: scope}

	if o.UserDataDir != "" {
		if b.Family() == FamilyFirefox {
			return nil, errors.New("nativemsg: Firefox has no user-data-dir manifest location")
		}
		if !absFor(goos, o.UserDataDir) {
			return nil, fmt.Errorf("nativemsg: user data dir %q is not absolute", o.UserDataDir)
		}
		loc.Dir = joinFor(goos, o.UserDataDir, "NativeMessagingHosts")
	} else if goos == "windows" {
		hive := `HKCU`
		dir := o.WindowsDir
		if scope == SystemScope {
			hive = `HKLM`
			if dir == "" {
				dir = filepath.Join(os.Getenv("ProgramData"), name)
			}
		} else if dir == "" {
			dir = filepath.Join(os.Getenv("LOCALAPPDATA"), name)
		}
		loc.Dir = filepath.Clean(dir)
		loc.RegistryKey = hive + `\Software\` + windowsKeys[b] + `\NativeMessagingHosts\` + name
	} else {
		rel := layouts[layoutKey{goos == "darwin", scope, b}]
		if scope == UserScope {
			home := o.HomeDir
			if home == "" {
				h, err := os.UserHomeDir()
				if err != nil {
					return nil, fmt.Errorf("nativemsg: finding the home directory: %w", err)
				}
				home = h
			}
			loc.Dir = joinFor(goos, home, rel)
		} else {
			loc.Dir = rel
		}
	}
	loc.ManifestPath = joinFor(goos, loc.Dir, name+".json")
	return loc, nil
}

// joinFor joins path elements as the system goos writes paths: with this
// system's separator when it is goos (or Windows, whose separator only
// Windows knows), else with slashes, so that a Unix layout described on
// Windows keeps its slashes.
func joinFor(goos string, elem ...string) string {
	if goos == runtime.GOOS || goos == "windows" {
		return filepath.Join(elem...)
	}
	return path.Join(elem...)
}

// absFor reports whether p is absolute on the system goos.
func absFor(goos, p string) bool {
	if goos == runtime.GOOS {
		return filepath.IsAbs(p)
	}
	if goos == "windows" {
		return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
	}
	return strings.HasPrefix(p, "/")
}

type layoutKey struct {
	darwin bool
	scope  Scope
	b      Browser
}

// layouts are the manifest directories of each browser: relative to the
// home directory for user scope, absolute for system scope.
var layouts = map[layoutKey]string{
	{false, UserScope, Chrome}:   ".config/google-chrome/NativeMessagingHosts",
	{false, UserScope, Chromium}: ".config/chromium/NativeMessagingHosts",
	{false, UserScope, Edge}:     ".config/microsoft-edge/NativeMessagingHosts",
	{false, UserScope, Brave}:    ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts",
	{false, UserScope, Firefox}:  ".mozilla/native-messaging-hosts",

	{false, SystemScope, Chrome}:   "/etc/opt/chrome/native-messaging-hosts",
	{false, SystemScope, Chromium}: "/etc/chromium/native-messaging-hosts",
	{false, SystemScope, Edge}:     "/etc/opt/edge/native-messaging-hosts",
	{false, SystemScope, Brave}:    "/etc/opt/chrome/native-messaging-hosts", // Brave reads Chrome's system directory
	{false, SystemScope, Firefox}:  "/usr/lib/mozilla/native-messaging-hosts",

	{true, UserScope, Chrome}:   "Library/Application Support/Google/Chrome/NativeMessagingHosts",
	{true, UserScope, Chromium}: "Library/Application Support/Chromium/NativeMessagingHosts",
	{true, UserScope, Edge}:     "Library/Application Support/Microsoft Edge/NativeMessagingHosts",
	{true, UserScope, Brave}:    "Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
	{true, UserScope, Firefox}:  "Library/Application Support/Mozilla/NativeMessagingHosts",

	{true, SystemScope, Chrome}:   "/Library/Google/Chrome/NativeMessagingHosts",
	{true, SystemScope, Chromium}: "/Library/Application Support/Chromium/NativeMessagingHosts",
	{true, SystemScope, Edge}:     "/Library/Microsoft/Edge/NativeMessagingHosts",
	{true, SystemScope, Brave}:    "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
	{true, SystemScope, Firefox}:  "/Library/Application Support/Mozilla/NativeMessagingHosts",
}

var windowsKeys = map[Browser]string{
	Chrome:   `Google\Chrome`,
	Chromium: `Chromium`,
	Edge:     `Microsoft\Edge`,
	Brave:    `BraveSoftware\Brave-Browser`,
	Firefox:  `Mozilla`,
}

// ErrRegistryRequired is matched by the *RegistryError Install and
// Uninstall return when loc names a Windows registry key (a Location made
// with LocationOptions.GOOS "windows") but the program does not run on
// Windows, so the key cannot be changed from here.
var ErrRegistryRequired = errors.New("nativemsg: a Windows registry change is required")

// RegistryError tells what to change in the Windows registry to finish an
// Install or Uninstall made off Windows. The manifest file itself has been
// written or removed.
type RegistryError struct {
	Key          string
	ManifestPath string
	Remove       bool // true after Uninstall: delete Key
}

func (e *RegistryError) Error() string {
	if e.Remove {
		return fmt.Sprintf(`nativemsg: manifest removed; now delete the registry key %s (reg delete "%s" /f)`, e.Key, e.Key)
	}
	return fmt.Sprintf(`nativemsg: manifest written to %s; now set the default value of the registry key %s to that path (reg add "%s" /ve /t REG_SZ /d "%s" /f)`,
		e.ManifestPath, e.Key, e.Key, e.ManifestPath)
}

func (e *RegistryError) Unwrap() error { return ErrRegistryRequired }

// ErrRegistryConflict is matched by the *RegistryConflictError Install
// and Uninstall return when the registry key already points at another
// manifest.
var ErrRegistryConflict = errors.New("nativemsg: the registry key points at another manifest")

// RegistryConflictError reports a registry key (Windows) whose default
// value is not the manifest being installed or removed: another host, or
// another copy of this one, is registered under the name. Nothing was
// changed; InstallOptions.Force replaces or deletes the key anyway.
type RegistryConflictError struct {
	Key      string
	Existing string // the key's current default value
	Want     string // loc.ManifestPath
}

func (e *RegistryConflictError) Error() string {
	return fmt.Sprintf("nativemsg: registry key %s points at %q, not %q; nothing changed (force to replace it)", e.Key, e.Existing, e.Want)
}

func (e *RegistryConflictError) Unwrap() error { return ErrRegistryConflict }

// InstallOptions adjusts Install and Uninstall. Nil means the defaults.
type InstallOptions struct {
	// Force replaces (Install) or deletes (Uninstall) a Windows registry
	// key that points at another manifest, instead of failing with a
	// *RegistryConflictError. Off by default: another host's key is never
	// overwritten silently.
	Force bool
}

// Install validates m and writes it to loc.ManifestPath atomically: to a
// temporary file in the same directory, then renamed over the target, so a
// browser never reads a half-written manifest. Missing directories are
// created. opts may be nil.
//
// On Windows (loc.RegistryKey set) it then sets the default value of
// loc.RegistryKey (under HKEY_CURRENT_USER for UserScope,
// HKEY_LOCAL_MACHINE for SystemScope) to loc.ManifestPath, which is how
// the browser finds the manifest. A key that already holds another path
// is reported with a *RegistryConflictError before anything is written,
// unless opts.Force. Off Windows, a loc that names a registry key gets the
// manifest file and a *RegistryError saying which value to set.
func Install(m *HostManifest, loc *Location, opts *InstallOptions) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if filepath.Base(loc.ManifestPath) != m.Name+".json" {
		return fmt.Errorf("nativemsg: manifest %q must be installed as %s.json", m.Name, m.Name)
	}
	switch loc.Browser.Family() {
	case FamilyChromium:
		if len(m.AllowedOrigins) == 0 {
			return fmt.Errorf("nativemsg: %s needs allowed_origins", loc.Browser)
		}
	case FamilyFirefox:
		if len(m.AllowedExtensions) == 0 {
			return errors.New("nativemsg: firefox needs allowed_extensions")
		}
	}
	force := opts != nil && opts.Force
	if loc.RegistryKey != "" {
		if err := checkRegistry(loc, force); err != nil {
			return err
		}
	}
	data, err := m.MarshalIndent()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(loc.Dir, 0o755); err != nil {
		return fmt.Errorf("nativemsg: installing host manifest: %w", err)
	}
	if err := writeFileAtomic(loc.ManifestPath, data); err != nil {
		return fmt.Errorf("nativemsg: installing host manifest: %w", err)
	}
	if loc.RegistryKey != "" {
		return setRegistry(loc)
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	committed = true
	return nil
}

// Uninstall removes the manifest file at loc.ManifestPath and, on Windows,
// the registry key loc.RegistryKey when its default value is that file
// (any other value gives a *RegistryConflictError and nothing is removed,
// unless opts.Force). A manifest or key that is already absent is not an
// error. Off Windows, a loc that names a registry key gets a
// *RegistryError naming the key to delete. opts may be nil.
func Uninstall(loc *Location, opts *InstallOptions) error {
	force := opts != nil && opts.Force
	if loc.RegistryKey != "" {
		if err := checkRegistry(loc, force); err != nil {
			return err
		}
	}
	if err := os.Remove(loc.ManifestPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nativemsg: removing host manifest: %w", err)
	}
	if loc.RegistryKey != "" {
		return deleteRegistry(loc)
	}
	return nil
}

// registryHive splits a Location's RegistryKey into its hive (HKCU or
// HKLM) and the path below it.
func registryHive(key string) (hive, path string, err error) {
	hive, path, ok := strings.Cut(key, `\`)
	if !ok || (hive != "HKCU" && hive != "HKLM") || path == "" {
		return "", "", fmt.Errorf("nativemsg: registry key %q is not under HKCU or HKLM", key)
	}
	return hive, path, nil
}
