// Package sockpath is the agent socket's default path, which package
// agentproto's SocketPath and package bridge's ListenUnix both need.
package sockpath

// Unix is the default path on Unix systems (agentproto.DefaultSocketPath).
const Unix = "/tmp/weboperator-bridge.sock"
