// Package extension embeds the project's reference browser extension: a
// small Manifest V3 extension in plain JavaScript (no build step, no npm
// dependencies) that speaks both extension-side protocols, so that the SDK
// is tested, and can be smoke-tested, against a real browser.
//
//   - The agent protocol's extension leg: it starts the native host with
//     chrome.runtime.connectNative("com.weboperator.bridge"), sends
//     {"kind":"bridge:hello"}, answers every bridge:request (concurrently)
//     with a bridge:response, and sends task events as bridge:event. The
//     browser.* commands do real work in the page: snapshot (nodes with @eN
//     refs, viewport first), click, type, press, scroll, extract, navigate
//     (answered once the page has loaded) and screenshot
//     (chrome.tabs.captureVisibleTab, JPEG). Each is wrapped in a synthetic
//     "External Agent" task whose task:update, task:step, task:update events
//     precede the response. Action failures are results with ok:false; only
//     thrown errors become the response's error; an unknown type is the
//     error "Unknown bridge request: <type>". When the port drops it connects
//     again after Config.NativeReconnectDelay (5 s, as the reference does).
//   - The extension bridge's WebSocket client: it dials
//     ws://127.0.0.1:<port>/ws, sends browser_hello with the token, runs
//     every browser_command (navigate, click, type with press_enter, read,
//     screenshot as PNG, tabs) on the tab it controls, enforcing timeout_ms
//     and answering exactly one browser_result per id, answers
//     approval_request as Config.Approvals says, sends {"type":"ping"} every
//     20 s, reconnects with backoff (1 s doubling to 30 s, reset by the
//     ack) and ignores unknown, non-JSON and non-object frames. It has no
//     side panel, so it sends none of the panel's frames
//     (list_conversations, user_message, tool_request, …).
//
// # Quick start
//
//	dir, _ := os.MkdirTemp("", "ext")
//	err := extension.Write(dir, extension.Config{HubPort: 52789, HubToken: token})
//	// chromium --load-extension=dir --disable-extensions-except=dir ...
//
// The browsertest package starts headless Chromium with it.
//
// # Configuration
//
// Write puts config.json (ConfigFile) beside the manifest. The service
// worker reads it with fetch(chrome.runtime.getURL("config.json")) when it
// starts and again before every connection attempt of either side, so
// WriteConfig changes a running extension at its next reconnect.
//
// # Tasks
//
// tasks.* run on a small in-memory task runner with the shapes and
// statuses of the agent protocol notes. There is no language model: a goal
// is a script of steps separated by ";" or new lines:
//
//	navigate <url>
//	click <css selector or @ref>
//	type <css selector or @ref> "<text as a JSON string>"
//	press <key> [<modifiers such as ctrl+shift>]
//	scroll up|down|top|bottom [<px>]
//	extract [<css selector>]   (the step's result carries extracted[])
//	wait <ms>                  (at most 60000)
//	confirm <question>         (awaiting_confirm until tasks.confirm, unless autoConfirm)
//	fail <message>             (the task fails)
//
// A goal with any other step fails while planning. startUrl adds a first
// navigate step; timeoutMs fails the task when it runs longer. tasks.wait
// waits at most 10 minutes. The runner
// keeps the newest 100 tasks, in the service worker's memory: Chrome does
// not stop a worker whose native port is open, but when it does stop it
// (the port was down and nothing else happened for 30 s) the tasks are
// gone, and so is the hub side's backoff, which starts again at its
// minimum.
//
// # Test hook
//
// The request type "debug.dropNativePort" answers {"ok":true}, then, half
// a second later (a disconnect discards what Chrome has not yet written
// to the host, the answer included), disconnects the native port; the
// extension reconnects after Config.NativeReconnectDelay. Tests use it to
// see a host exit on EOF and a new host come up.
//
// # Permissions
//
// The manifest asks for exactly what the code uses:
//
//   - nativeMessaging: connectNative to the host.
//   - tabs: the url and title of tabs, for results and the tabs action.
//   - scripting: chrome.scripting.executeScript runs the page agent that
//     snapshots and acts on the page.
//   - alarms: an alarm (every 30 s, Config.WakeInterval) starts the
//     service worker again after Chrome stopped it, and it reconnects.
//   - host_permissions <all_urls>: chrome.tabs.captureVisibleTab demands
//     <all_urls> or activeTab, and activeTab needs a user gesture a headless
//     browser never makes (Chromium 156 refuses site-specific host
//     permissions for captures); it also lets executeScript reach the pages
//     it drives.
//
// # Limits
//
// Snapshots and extracts span the page's frames: nodes inside a frame have
// refs @f<frameId>e<N> and a frameId, listed after the top frame's within
// the viewport-first order, and their bbox is relative to their frame.
// inViewport always means the top-level viewport: a frame scrolled out of
// sight has none of its nodes in it. Inside a cross-origin frame that is
// an IntersectionObserver's answer, waited for up to 5 s (it comes within
// milliseconds unless the machine is overloaded); in a tab that is not
// visible, which renders nothing, those nodes count as outside.
// Snapshots enter shadow roots, open and closed, so web components'
// controls get refs too. Selectors (the extension bridge, task steps) are
// document.querySelector's: they reach the top frame's light DOM only.
// Each frame's snapshot lists at most 400 nodes unless allElements is true;
// names are cut at 200 characters, extracted text at 2000. Clicks and keys
// are synthesised DOM events (untrusted: a page can tell them apart).
// Screenshots are spaced by 550 ms, Chrome's quota for captureVisibleTab.
// navigate accepts http, https and about:blank only, and answers once the
// page has loaded (an error after 30 s). Every other command waits for a
// page that is still loading at most 5 s, then acts on it as it is, and
// does not wait again for that same load.
//
// # Security
//
// The extension obeys whoever holds the native port or the hub token:
// load it only into a browser profile made for tests. Every value it
// returns from a page, on both protocols (snapshot, extract, read), passes
// the extension bridge's redaction rule: the value of a password input, of
// an input whose autocomplete is current-password, new-password or
// one-time-code, or of one whose name, id or aria-label matches
// /pass|secret|token|otp|cvc|card/i is replaced by "[redacted]". The rule
// covers every holder of a value, selects and editable content as well as
// inputs and text areas, and also the copies of that value innerText
// makes: a secret select's options and a secret editable's text are
// redacted in names, text snippets, extracted text and read's content.
// Typed text is left out of task events. The hub token sits in config.json, written
// with mode 0600.
//
// # Concurrency
//
// Write and WriteConfig may be called from any goroutine, but not
// concurrently for the same folder. WriteConfig replaces config.json
// atomically, so a running extension never reads half a file.
package extension
