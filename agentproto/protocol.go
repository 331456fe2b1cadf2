package agentproto

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
)

// DefaultSocketPath is the agent socket's default path on Unix systems
// ([PlatformSocketPath]; [EnvSocket] overrides it only through
// [ConfigFromEnv] and [DialEnv]). Windows uses a per-user path instead.
const DefaultSocketPath = "/tmp/weboperator-bridge.sock"

// HostName is the native messaging host's name, as the extension passes it
// to chrome.runtime.connectNative.
const HostName = "com.weboperator.bridge"

// DefaultTimeout is how long a request waits for the extension when its
// timeoutMs is missing or 0.
const DefaultTimeout = 60 * time.Second

// DefaultWaitTimeout is how long tasks.wait waits when its payload has no
// timeoutMs (the extension's default).
const DefaultWaitTimeout = 120 * time.Second

// Command types: a request's "type". They are untyped strings, as
// net/http's Method constants are, because the set is open: a bridge
// relays any type to the extension (which answers an unknown one with
// [ErrUnknownRequest]), and [Client.Call] sends any. browser.type is
// TypeText, not the stutter TypeType.
const (
	TypeHealth       = "bridge.health"
	TypeSnapshot     = "browser.snapshot"
	TypeScreenshot   = "browser.screenshot"
	TypeNavigate     = "browser.navigate"
	TypeClick        = "browser.click"
	TypeText         = "browser.type"
	TypePress        = "browser.press"
	TypeScroll       = "browser.scroll"
	TypeExtract      = "browser.extract"
	TypeTasksList    = "tasks.list"
	TypeTasksGet     = "tasks.get"
	TypeTasksStart   = "tasks.start"
	TypeTasksStop    = "tasks.stop"
	TypeTasksPause   = "tasks.pause"
	TypeTasksResume  = "tasks.resume"
	TypeTasksConfirm = "tasks.confirm"
	TypeTasksWait    = "tasks.wait"
)

// FrameKind is a frame's "kind" member. The zero value is none: a frame
// without one, which the host ignores.
type FrameKind string

// Frame kinds. The extension and the host exchange only the four
// "bridge:" kinds; agents receive events as [KindAgentEvent] frames.
const (
	KindHello    FrameKind = "bridge:hello"
	KindRequest  FrameKind = "bridge:request"
	KindResponse FrameKind = "bridge:response"
	KindEvent    FrameKind = "bridge:event"
	// KindAgentEvent is the kind of the frame carrying an event to agents.
	KindAgentEvent FrameKind = "event"
)

// Request is an agent's request as it travels on the socket.
//
// ID is echoed in the reply exactly as sent (a string, a number, any JSON
// value); a request without one (or with null or "") is answered with a
// generated id. Payload is relayed to the extension byte for byte; when it
// is missing or not an object the extension receives {}.
type Request struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Token     string          `json:"token,omitempty"`
}

// Response is the reply to a [Request]. Exactly one of Result and Error is
// meaningful: a reply with neither is a null result.
type Response struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// EventFrame is how an event reaches agents: {"kind":"event","event":E}.
type EventFrame struct {
	Kind  FrameKind       `json:"kind"`
	Event json.RawMessage `json:"event"`
}

// ExtensionRequest is the frame the host sends the extension for each
// forwarded request. ID is the host's own id, never the agent's.
type ExtensionRequest struct {
	Kind    FrameKind       `json:"kind"` // KindRequest
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// ExtensionResponse is the extension's answer to an [ExtensionRequest].
// When HasError is false and Result is empty the result is null.
type ExtensionResponse struct {
	Kind   FrameKind       `json:"kind"` // KindResponse
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// ParseRequest decodes one agent request frame as a [github.com/agentbridge/agentbridge/agentproto/bridge.Server] does: strictly
// (exact keys, a member named twice refused, a token that is not a string
// is no token) and with the defaults of the protocol applied: a missing or
// non-object payload becomes {}, and a missing, null or empty id stays
// empty (the server generates one). A timeoutMs that is not a positive
// number is 0.
func ParseRequest(data []byte) (*Request, error) {
	var r wire.Request
	if err := wire.DecodeRequest(data, &r); err != nil {
		return nil, err
	}
	req := &Request{
		Type:      r.TypeStr,
		TimeoutMs: int64(r.Timeout / time.Millisecond),
		Payload:   json.RawMessage(bytes.Clone(r.Payload)),
	}
	if r.Payload == nil {
		req.Payload = json.RawMessage(wire.EmptyObject)
	}
	if r.ID != nil {
		req.ID = json.RawMessage(bytes.Clone(r.ID))
	}
	if r.HasToken {
		req.Token = string(r.Token)
	}
	return req, nil
}
