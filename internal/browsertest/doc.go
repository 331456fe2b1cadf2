// Package browsertest runs a real Chromium with the project's reference
// extension: the engine under the public browsertest package (the kit for
// users' tests), and what the project's own tests and the demo need
// beyond it: Launch without a *testing.T, the internal extension
// configuration (a scripted side panel, logging, wake interval), the
// DevTools pipe, the relay host, process lists.
//
// Launch finds Chromium, makes a fresh profile in a temporary folder,
// writes the extension there (package extension) with the given
// configuration, installs a native messaging host manifest for a host
// executable into <profile>/NativeMessagingHosts (so nothing is written to
// the home directory), and starts Chromium headless in its own process
// group, with extra environment variables that the native hosts it starts
// inherit. Chromium gets a private TMPDIR there (Browser.TempDir), as it
// leaves folders of its own (org.chromium.Chromium.*) in its TMPDIR. Close
// stops Chromium and every process it started, native hosts included, and
// removes the folder.
//
// The core (Launch, Browser, BuildBinary, FindChromium, ListenRelay) needs
// no *testing.T, so a program such as the demo uses it too. Start, Build
// and SkipWithoutChromium are thin testing.TB helpers on top.
//
// # Quick start
//
//	func TestSomething(t *testing.T) {
//		host := browsertest.Build(t, "github.com/agentbridge/agentbridge/examples/weboperator-host")
//		b := browsertest.Start(t, &browsertest.Options{
//			HostPath: host,
//			Env:      []string{"WEBOPERATOR_API_TOKEN=" + token, "WEBOPERATOR_AGENT_SOCKET=" + sock},
//			Extension: extension.Config{HubPort: hubPort, HubToken: hubToken},
//		})
//		_ = b // Chromium runs until the test ends, pass or fail
//	}
//
// Start skips the test with a clear message when Chromium is missing, and
// fails it instead when the environment variable CI is set.
//
// # Finding Chromium
//
// FindChromium takes an explicit path, else $AGENTBRIDGE_CHROMIUM, else the
// first of chromium and chromium-browser on PATH. Debian's package is
// chromium. Branded Google Chrome ignores --load-extension since version
// 137, so it is never picked from PATH.
//
// # Processes
//
// Launch sets AGENTBRIDGE_BROWSERTEST_RUN (MarkerEnv) to a value unique to
// the Browser in Chromium's environment. Every process Chromium starts
// inherits it, including native hosts that Chromium puts in process
// groups of their own and helpers that outlive it. Close signals
// Chromium's process group with SIGTERM (so Chromium closes its hosts'
// pipes and the hosts clean up at EOF), waits up to 5 s, then sends SIGKILL
// to whatever still carries the marker and waits until nothing does. On
// Linux the kernel also kills Chromium if the process that launched it
// dies first (Pdeathsig). Processes lists the live marked processes, and
// ProcessAlive and WaitExit check a pid, so tests can prove that nothing
// survives. Elsewhere than Linux only Chromium's process group is known.
//
// # Relay host
//
// RelayHostPackage is a native messaging host that copies bytes between
// its standard streams and the Unix socket a Relay listens on, so that a
// test speaks the native port's bridge:* frames to the real extension
// itself: build it with BuildBinary, give Relay.Env() in Options.Env, and
// Accept each host as it connects.
//
// # Service worker
//
// With Options.DevTools, Launch opens the DevTools protocol on a pipe
// (--remote-debugging-pipe: file descriptors, no TCP port), and
// Browser.StopExtensionWorker stops the extension's service worker the way
// Chrome stops an idle one, so a test can check that the extension comes
// back by itself.
//
// # Limits
//
// Unix systems only: on others Launch returns ErrUnsupported. Browser.Output
// keeps the last 64 KiB of Chromium's output; a failed build's error quotes
// at most 4 KiB of compiler output. Close waits up to 5 s for Chromium to
// exit on SIGTERM and up to 5 s more for killed processes to go. A
// DevTools message (Options.DevTools) is at most 16 MiB. The window is 1280
// by 800 unless Options say otherwise.
//
// # Concurrency
//
// A Browser's methods are safe for concurrent use; Close is idempotent.
// BuildBinary may be called from any goroutine and builds each package
// once per process. Each Launch starts a separate Chromium with its own
// profile; on a small machine, run them one after the other.
//
// # Security
//
// Chromium runs with --no-sandbox (containers and CI have no user
// namespaces) and the extension obeys whoever holds its native port or
// hub token: use the harness with pages you serve on 127.0.0.1, never to
// browse the web. The hub token travels in the extension's config.json,
// written with mode 0600 inside a 0700 temporary folder.
package browsertest
