// Package agentbridge is the Go SDK that connects AI agents to a person's
// real browser and to websites. It implements three protocols; import the
// package that serves the one you need:
//
//   - [github.com/agentbridge/agentbridge/nativemsg]: Chrome native messaging
//     framing (uint32 little-endian length + JSON) with size limits, a host's
//     guarded stdio, launch arguments, and host manifests with their install
//     locations per browser and OS.
//   - [github.com/agentbridge/agentbridge/agentproto]: the agent protocol.
//     Agents call a local bridge over a Unix socket ([agentproto.Dial]); a
//     native messaging host joins that socket to a Chrome extension; an HTTP
//     compatibility API sits beside it.
//   - [github.com/agentbridge/agentbridge/extbridge]: the extension bridge, a
//     WebSocket hub a Go CLI embeds and a browser extension dials into for
//     browser commands, conversation sync, approvals, tool calls and
//     artifacts.
//   - [github.com/agentbridge/agentbridge/webagents]: WebAgents site
//     manifests, discovery, a checker, and the dependency-aware batch
//     workflow: planner, executor with pacing, a net/http server adapter and
//     a client.
//
// The examples directory of the module holds thin command-line programs that
// wire these packages together; `go run ./examples/demo` is a guided tour.
package agentbridge
