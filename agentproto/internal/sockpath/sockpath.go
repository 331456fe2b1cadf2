// Package sockpath is what package agentproto (SocketPath, Dial's peer
// check) and package bridge (ListenUnix) share about the agent socket: its
// default path, and on Windows the ownership helpers both checks use.
package sockpath

// Unix is the default path on Unix systems (agentproto.DefaultSocketPath).
const Unix = "/tmp/weboperator-bridge.sock"
