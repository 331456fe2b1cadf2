package nativemsg

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ErrNotLaunchedByBrowser is returned by [ParseLaunchArgs] when the arguments
// are not those a browser starts a native host with, so a program can tell
// a browser launch from a command line of its own.
var ErrNotLaunchedByBrowser = errors.New("nativemsg: not launched by a browser")

// Family is a kind of browser, as far as native messaging differs.
type Family int

const (
	// FamilyChromium is Chrome, Chromium, Edge, Brave and other Chromium browsers.
	FamilyChromium Family = iota + 1
	// FamilyFirefox is Firefox and other Gecko browsers.
	FamilyFirefox
)

func (f Family) String() string {
	switch f {
	case FamilyChromium:
		return "chromium"
	case FamilyFirefox:
		return "firefox"
	}
	return "Family(" + strconv.Itoa(int(f)) + ")"
}

// LaunchInfo is what a browser tells a native host on its command line.
type LaunchInfo struct {
	Family Family
	// Origin is the caller's origin, "chrome-extension://<id>/" (Chromium).
	Origin string
	// ExtensionID is the extension's id: 32 letters a-p for Chromium, the
	// add-on id (an e-mail-like id or a {UUID}) for Firefox.
	ExtensionID string
	// ParentWindow is the native handle of the calling window, from
	// --parent-window=N; Chromium on Windows only, else 0.
	ParentWindow int64
	// ManifestPath is the host manifest's path (Firefox only).
	ManifestPath string
}

// ParseLaunchArgs reads a native host's launch arguments, os.Args[1:].
// Chromium browsers pass "chrome-extension://<id>/" and, on Windows,
// "--parent-window=N"; Firefox passes the manifest's path and the add-on id.
// Arguments of any other shape give an error matching
// [ErrNotLaunchedByBrowser].
func ParseLaunchArgs(args []string) (*LaunchInfo, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: no arguments", ErrNotLaunchedByBrowser)
	}
	if strings.HasPrefix(args[0], "chrome-extension://") {
		id, err := originExtensionID(args[0])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotLaunchedByBrowser, err)
		}
		info := &LaunchInfo{Family: FamilyChromium, Origin: args[0], ExtensionID: id}
		for _, a := range args[1:] {
			v, ok := strings.CutPrefix(a, "--parent-window=")
			if !ok {
				continue // later Chrome versions may add flags
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: malformed --parent-window", ErrNotLaunchedByBrowser)
			}
			info.ParentWindow = n
		}
		return info, nil
	}
	if len(args) == 2 && strings.HasSuffix(args[0], ".json") && filepath.IsAbs(args[0]) && ValidAddonID(args[1]) {
		return &LaunchInfo{Family: FamilyFirefox, ManifestPath: args[0], ExtensionID: args[1]}, nil
	}
	return nil, fmt.Errorf("%w: unrecognised arguments", ErrNotLaunchedByBrowser)
}

// originExtensionID returns the id of an exact "chrome-extension://<id>/"
// origin.
func originExtensionID(origin string) (string, error) {
	rest, ok := strings.CutPrefix(origin, "chrome-extension://")
	id, ok2 := strings.CutSuffix(rest, "/")
	if !ok || !ok2 || !ValidExtensionID(id) {
		return "", errors.New(`origin must be "chrome-extension://<32 letters a-p>/"`)
	}
	return id, nil
}

// ValidExtensionID reports whether id has the form of a Chromium extension
// id: 32 letters from a to p.
func ValidExtensionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 'a' || id[i] > 'p' {
			return false
		}
	}
	return true
}

// addonID is the form Firefox gives add-on ids: "{UUID}" or an e-mail-like
// "name@domain" whose name part may be empty.
var addonID = regexp.MustCompile(`^(\{[0-9A-Fa-f-]{36}\}|[A-Za-z0-9._-]*@[A-Za-z0-9._-]+)$`)

// ValidAddonID reports whether id has the form of a Firefox add-on id.
func ValidAddonID(id string) bool { return len(id) <= 255 && addonID.MatchString(id) }

// ExtensionOrigin returns the origin of a Chromium extension,
// "chrome-extension://<id>/", as allowed_origins lists it.
func ExtensionOrigin(id string) string { return "chrome-extension://" + id + "/" }
