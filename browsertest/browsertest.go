package browsertest

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/extension"
	ibt "github.com/agentbridge/agentbridge/internal/browsertest"
	iext "github.com/agentbridge/agentbridge/internal/extension"
)

// ChromiumEnv is the environment variable that names the Chromium
// executable when Options.Chromium is empty.
const ChromiumEnv = "AGENTBRIDGE_CHROMIUM"

// ErrChromiumNotFound is matched by the error FindChromium returns when no
// browser executable can be found.
var ErrChromiumNotFound = ibt.ErrChromiumNotFound

// ErrNoNativePort is returned by [Browser.AcceptNative] when the browser
// runs a native host executable of its own ([Options.Host]) or its
// extension's native side is off.
var ErrNoNativePort = errors.New("browsertest: the native port goes to Options.Host or is off, not to the test")

// FindChromium returns the browser executable to use: path when it is not
// empty, else $AGENTBRIDGE_CHROMIUM ([ChromiumEnv]), else the first of
// chromium and chromium-browser found on PATH. Branded Google Chrome
// ignores --load-extension since version 137, so it is never picked from
// PATH; Chrome for Testing, which loads extensions, can be named by path.
func FindChromium(path string) (string, error) { return ibt.FindChromium(path) }

// SkipWithoutChromium returns the Chromium executable [FindChromium]("")
// finds. When there is none it skips the test with a message saying how
// to get one or, when the environment variable CI is set, fails it: in CI
// the browser tests must run.
func SkipWithoutChromium(t testing.TB) string {
	t.Helper()
	return ibt.SkipWithoutChromium(t)
}

// Options configures [Start]. The zero value (or nil) starts headless
// Chromium from PATH with the reference extension's native side on and
// its native port given to the test ([Browser.AcceptNative]), and its hub
// side off.
type Options struct {
	// Chromium is the browser executable. "" means FindChromium("").
	Chromium string
	// Extension configures the reference extension: which native host it
	// starts, the hub it dials (HubPort, HubToken, HubProtocol), its
	// reconnect timings and how it answers approvals. nil means
	// extension.Write's defaults: native side on, hub side off.
	Extension *extension.Options
	// Host is the native messaging host executable Chromium starts when
	// the extension connects: your own host, built for instance with
	// [BuildHost]. Start installs its manifest into the browser's profile
	// (nothing is written to the home directory), for the extension's
	// origin only. "" gives the native port to the test instead: Chromium
	// starts the test binary itself as a relay, and [Browser.AcceptNative]
	// returns each connection.
	Host string
	// Env holds extra environment variables, "KEY=value", for Chromium.
	// The native hosts it starts inherit them: this is how a host gets
	// its settings (for the example host, agentproto.EnvSocket and
	// agentproto.EnvToken).
	Env []string
	// URL is the page the browser opens first. "" means about:blank.
	URL string
	// Headful shows a browser window (a display is needed) instead of
	// running headless.
	Headful bool
	// Args are extra Chromium command-line arguments, after the kit's own.
	Args []string
	// Output receives Chromium's standard output and error as they come.
	// nil discards them; the last 64 KiB are kept either way and logged
	// when the test fails.
	Output io.Writer
}

// Browser is a headless Chromium with the reference extension loaded,
// started by [Start] for one test. Its methods are safe for concurrent use.
type Browser struct {
	b     *ibt.Browser
	relay *ibt.Relay // nil unless the native port goes to the test

	mu    sync.Mutex
	ports []*NativePort // accepted, closed at cleanup
}

// Start launches Chromium with the reference extension for the test t and
// returns once the browser process runs (the extension connects a moment
// later: wait with [Browser.AcceptNative], [DialAgent] or your hub). It
// skips the test with a clear message when Chromium is missing and
// opts names none, and fails it instead when the environment variable CI
// is set; on systems the kit does not support (Windows) it skips it. The
// browser gets a fresh profile in a temporary folder, and
// Chromium a private TMPDIR, so nothing is left in the caller's TMPDIR.
//
// The browser is closed when the test and its subtests finish, passed or
// failed: Chromium and every process it started, native hosts included,
// are stopped, and the folder is removed. The cleanup fails the test if a
// process survives, and logs the end of Chromium's output when the test
// failed. opts may be nil.
func Start(t testing.TB, opts *Options) *Browser {
	t.Helper()
	if err := ibt.Supported(); err != nil {
		t.Skipf("skipping the real-browser test: %v (%s)", err, runtime.GOOS)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Chromium == "" {
		o.Chromium = SkipWithoutChromium(t)
	}
	var ext extension.Options
	if o.Extension != nil {
		ext = *o.Extension
	}
	bo := &ibt.Options{
		Chromium:       o.Chromium,
		Extension:      iext.Config{NativeHost: ext.NativeHost},
		WriteExtension: func(dir string) error { return extension.Write(dir, &ext) },
		HostPath:       o.Host,
		Env:            o.Env,
		Headful:        o.Headful,
		URL:            o.URL,
		Args:           o.Args,
		Output:         o.Output,
	}
	b := &Browser{}
	if o.Host == "" && !ext.DisableNative {
		relay, err := ibt.ListenRelay()
		if err != nil {
			t.Fatalf("browsertest: %v", err)
		}
		// Runs after the browser's cleanup, which is registered later.
		t.Cleanup(func() {
			relay.Close()
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, p := range b.ports {
				p.Close()
			}
		})
		exe, err := os.Executable()
		if err != nil {
			t.Fatalf("browsertest: the test binary, to start as the native host: %v", err)
		}
		b.relay = relay
		bo.HostPath = exe
		bo.Env = append(append([]string(nil), o.Env...), relay.Env())
	}
	b.b = ibt.Start(t, bo)
	return b
}

// Close stops Chromium and every process it started, then removes the
// browser's folder; [Start] arranges for it to run when the test ends, so
// call it only to stop the browser earlier. It is idempotent and safe to
// call from any goroutine, and returns an error if a process survived or
// the folder could not be removed.
func (b *Browser) Close() error { return b.b.Close() }

// Output returns the last 64 KiB Chromium wrote to its standard output
// and error.
func (b *Browser) Output() []byte { return b.b.Output() }

// SetExtension rewrites the extension's configuration with opts (nil
// means the defaults). The extension reads it again before each
// connection attempt, so the change applies at the next reconnect of each
// side: point it at a hub restarted on another port, say. The native
// side's host name cannot change once Chromium runs.
func (b *Browser) SetExtension(opts *extension.Options) error {
	return extension.Write(b.b.ExtensionDir, opts)
}

// HostPids returns the ids of the live native host processes Chromium
// started ([Options.Host], or the relays of an in-process host), so that
// a test can see a host come up, or exit when the extension drops its
// port ([WaitExit]). It returns nil where the system has no /proc.
func (b *Browser) HostPids() []int { return b.b.HostPids() }

// WaitExit waits until process pid has exited, or ctx ends. It works for
// any process, not only children of the caller (a native host is
// Chromium's child), by checking every 10 ms.
func WaitExit(ctx context.Context, pid int) error { return ibt.WaitExit(ctx, pid) }

// DialAgent connects an agent protocol client to the Unix socket of a
// native host Chromium started ([Options.Host], with its socket and token
// given in [Options.Env]) once the host is up and the extension has said
// hello: until then it retries every 100 ms. It gives up when ctx ends,
// with the last error seen. Use it with hosts built on agentproto, such
// as examples/weboperator-host.
func DialAgent(ctx context.Context, socket, token string) (*agentproto.Client, error) {
	return ibt.DialAgent(ctx, socket, token)
}
