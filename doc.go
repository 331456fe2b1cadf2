// Package agentbridge is the Go SDK that connects AI agents to a person's
// real browser and to websites. It speaks the protocols agents use for
// that, on both sides of each; import the package of the one you need
// (this package itself has no API):
//
//   - [github.com/agentbridge/agentbridge/nativemsg]: Chrome native messaging
//     framing (uint32 little-endian length + JSON) with size limits, a host's
//     guarded stdio, launch arguments, and host manifests with their install
//     locations per browser and OS.
//   - [github.com/agentbridge/agentbridge/agentproto]: the agent protocol.
//     Agents call a local bridge over a Unix socket
//     ([github.com/agentbridge/agentbridge/agentproto.Dial]); a native
//     messaging host joins that socket to a Chrome extension; an HTTP
//     compatibility API sits beside it.
//   - [github.com/agentbridge/agentbridge/extbridge]: the extension bridge, a
//     WebSocket hub a Go CLI embeds and a browser extension dials into for
//     browser commands, conversation sync, approvals, tool calls and
//     artifacts.
//   - [github.com/agentbridge/agentbridge/webagents]: WebAgents site
//     manifests, discovery, a checker, and the dependency-aware batch
//     workflow: planner, executor with pacing, a net/http server adapter and
//     a client.
//   - [github.com/agentbridge/agentbridge/safeprint]: printing what a page,
//     a site or an extension sent (JSON within bounded memory, text with
//     control characters made visible).
//
// For tests of programs built on the SDK,
// [github.com/agentbridge/agentbridge/agentproto/agentprototest] and
// [github.com/agentbridge/agentbridge/extbridge/extbridgetest] stand in for
// the browser extension, in memory;
// [github.com/agentbridge/agentbridge/browsertest] runs the real thing, the
// project's reference extension in headless Chromium, wired to your native
// host or your hub.
//
// # Examples
//
// Each package's examples (on pkg.go.dev, and in its example_test.go) are
// runnable and checked by go test; the Go snippets of the module's README
// are copies of them, kept identical by a test. The module's examples
// folder holds command-line programs, each showing one way to embed the
// SDK with its public API only; `go run ./examples/demo` is a guided tour
// of the whole SDK on this machine.
package agentbridge
