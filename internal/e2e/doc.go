// Package e2e holds the end-to-end tests: headless Chromium with the
// reference extension, the Go native messaging host started by Chromium
// itself, the extension bridge hub dialed by the real service worker, and
// the WebAgents shop, all on 127.0.0.1.
//
// The tests skip with a message when Chromium is absent, and fail instead
// when the CI environment variable is set.
package e2e
