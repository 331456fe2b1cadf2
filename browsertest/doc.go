// Package browsertest runs a real headless Chromium with the project's
// reference extension for your tests, in the spirit of net/http/httptest:
// test your native messaging host, your agent or your extension bridge hub
// against the browser itself, with no mock of the extension's side.
//
// [Start] makes a fresh profile in a temporary folder, writes the
// reference extension there (package extension) configured by
// [Options.Extension], and starts Chromium headless. The extension's two
// sides go where the test says:
//
//   - Native messaging: to your host executable ([Options.Host], built
//     by [BuildHost] if you like), whose manifest Start installs into the
//     profile; or, when Options.Host is empty, to the test itself:
//     [Browser.AcceptNative] returns the host's end of each native port,
//     which agentproto/bridge.NewHost runs a host on in-process, or which the
//     test reads and writes frames on.
//   - The extension bridge: to your hub on 127.0.0.1
//     (extension.Options.HubPort and HubToken; HubProtocol 2 for the
//     protocol-2 dialect).
//
// [NewPageServer] serves the pages the browser opens and waits for them to
// load; [DialAgent] waits for a host built on agentproto to come online;
// an extbridge.Hub's WaitConnected waits for the hub side.
//
// # Quick start
//
//	func TestMyHost(t *testing.T) {
//		host := browsertest.BuildHost(t, "example.com/myhost")
//		b := browsertest.Start(t, &browsertest.Options{Host: host})
//		pages := browsertest.NewPageServer(t, map[string]string{"/": "<h1>hi</h1>"})
//		// ... drive the browser through your host, then:
//		require.NoError(t, pages.WaitLoaded(ctx, "/"))
//		_ = b // Chromium runs until the test ends, passed or failed
//	}
//
// The Example runs an agent protocol host in the test process against the
// real extension.
//
// # Without Chromium
//
// Start skips the test with a message saying how to install Chromium when
// none is found, and fails it instead when the environment variable CI is
// set, so that a CI job without a browser cannot pass by skipping. The
// browser is [FindChromium]'s: [Options.Chromium], else $AGENTBRIDGE_CHROMIUM,
// else chromium or chromium-browser on PATH (Debian's package is
// chromium). Branded Google Chrome ignores --load-extension since version
// 137, so it is never picked from PATH: a machine with only Chrome skips.
//
// # Cleanup
//
// Start registers the browser's Close with t.Cleanup: when the test ends
// Chromium gets SIGTERM, then SIGKILL after 5 s, and every process it
// started, native hosts included (even those in process groups of their
// own), is killed and waited for; the profile folder is removed. Chromium
// runs with a private TMPDIR, which Close removes too, because it leaves
// folders of its own (org.chromium.Chromium.*) in its TMPDIR: the test's
// TMPDIR is left as it was. On Linux the kernel kills Chromium if the test
// binary dies first.
//
// # In-process native host
//
// With Options.Host empty, Chromium starts the test binary itself as the
// native host: the package's init function recognises that start (the
// relay's socket in its environment, the extension's origin as its
// argument), copies the port's bytes to a Unix socket the test listens
// on, and exits before any test runs. Started in any other way the test
// binary is unaffected. [NativePort] is the test's end.
//
// # Limits
//
// Unix systems only (Linux, macOS, the BSDs; elsewhere Start skips the
// test); HostPids and the search for stray processes need Linux's /proc.
// Output keeps the last 64 KiB of Chromium's output. The window is 1280 by 800. Each Start runs a
// separate Chromium of several processes and a few hundred MB: on a small
// machine, run browser tests one after the other (no t.Parallel).
//
// # Concurrency
//
// A Browser's and a PageServer's methods are safe for concurrent use;
// AcceptNative is for one goroutine at a time.
//
// # Security
//
// Chromium runs with --no-sandbox (containers and CI have no user
// namespaces), and the extension obeys whoever holds its native port or
// its hub token on every page: use the kit with pages served on
// 127.0.0.1, never to browse the web. The hub token travels in the
// extension's config.json, written with mode 0600 in a 0700 folder.
package browsertest
