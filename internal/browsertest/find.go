package browsertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ChromiumEnv is the environment variable that names the Chromium
// executable when no explicit path is given.
const ChromiumEnv = "AGENTBRIDGE_CHROMIUM"

// ErrChromiumNotFound is matched by the error FindChromium returns when no
// browser executable can be found.
var ErrChromiumNotFound = errors.New("browsertest: Chromium not found")

// chromiumNames are the executables looked up on PATH, in order. Branded
// Google Chrome is not among them: it ignores --load-extension since
// version 137, so a machine with only Chrome would run the browser tests
// and fail them, where it should skip them with the hint below.
var chromiumNames = []string{"chromium", "chromium-browser"}

// FindChromium returns the browser executable to use: path when it is not
// empty, else $AGENTBRIDGE_CHROMIUM, else the first of chromium and
// chromium-browser found on PATH. Branded Google Chrome ignores
// --load-extension since version 137, so it is never picked on its own;
// Chrome for Testing, which loads extensions, can be named by path.
func FindChromium(path string) (string, error) {
	if path == "" {
		path = os.Getenv(ChromiumEnv)
	}
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrChromiumNotFound, err)
		}
		return p, nil
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH (looked for %v; set %s to its path; on Debian: apt-get install chromium)",
		ErrChromiumNotFound, chromiumNames, ChromiumEnv)
}
