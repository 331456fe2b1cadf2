// Package extension writes the project's reference browser extension to a
// folder, unpacked, so that a real Chromium-based browser can load it and
// be driven through a native messaging host or an extension bridge hub of
// your own.
//
// The reference extension is a small Manifest V3 extension in plain
// JavaScript that speaks both extension-side protocols: it starts the
// native host with chrome.runtime.connectNative and answers the agent
// protocol's bridge:request frames (snapshot, click, type, press, scroll,
// extract, navigate, screenshot, tasks), and it dials an extension bridge
// hub on ws://127.0.0.1:<port>/ws with a shared token and runs its
// browser_command frames. Its manifest has a fixed key, so its id is
// always [ID], in every profile that loads it.
//
// # Quick start
//
//	err := extension.Write("ext", &extension.Options{HubPort: 52789, HubToken: token})
//	// chromium --user-data-dir=/tmp/test-profile --load-extension=ext
//	// or chrome://extensions → Developer mode → Load unpacked → ext
//
// A native host is found by its manifest, which must list [NativeOrigin] in
// allowed_origins: `weboperator-host install --browser chromium
// --extension-id <ID>` (examples/weboperator-host) writes one. The command
// examples/extension writes the folder and prints how to load it. For
// tests, package [github.com/agentbridge/agentbridge/browsertest] starts
// headless Chromium with the extension wired to your host or hub.
//
// # Security
//
// The extension obeys whoever holds its native port or its hub token, on
// every page the browser can open (host permission <all_urls>): load it
// only into a browser profile made for tests, never the one you browse
// with. It redacts the values of password and other secret-looking fields
// from what it returns. The hub token is written into the folder's
// config.json with mode 0600.
package extension

import (
	"time"

	iext "github.com/agentbridge/agentbridge/internal/extension"
)

// The extension's constants are written out here, not as the internal
// package's names, so that the package's documentation shows their values;
// a test holds them equal to the ones the extension is built with.

// ID is the extension's id, fixed by the key in its manifest.
const ID = "lllgkhehhfideabmfhnlkocagdfegbhf"

// NativeOrigin is the extension's entry for a native host manifest's
// allowed_origins, "chrome-extension://<ID>/".
const NativeOrigin = "chrome-extension://" + ID + "/"

// Origin is the Origin header the extension's WebSocket sends to a hub.
const Origin = "chrome-extension://" + ID

// Version is the extension's version, as its manifest says.
const Version = "0.1.0"

// ErrInvalidOptions is matched by the errors Write returns for Options it
// refuses.
var ErrInvalidOptions = iext.ErrInvalidConfig

// Options configures the extension Write puts in a folder. The zero value
// (or nil) connects to the native host com.weboperator.bridge and leaves
// the extension bridge side off.
type Options struct {
	// NativeHost is the name of the native messaging host the extension
	// starts with connectNative. "" means com.weboperator.bridge
	// (agentproto.HostName). It follows Chrome's rule for host names:
	// lowercase letters, digits, "_" and dots between them.
	NativeHost string
	// DisableNative turns the native messaging side off.
	DisableNative bool
	// HubPort is the TCP port of the extension bridge hub on 127.0.0.1;
	// the extension dials ws://127.0.0.1:<HubPort>/ws and reconnects
	// with backoff (1 s doubling to 30 s). Zero turns that side off.
	HubPort int
	// HubToken is the hub's shared token, sent in browser_hello. It is
	// required with HubPort.
	HubToken string
	// HubProtocol is the protocol_version the extension's browser_hello
	// announces: 0 sends none (the classic dialect), 2 the protocol-2
	// dialect of the newest opentask extension. Other values are sent as
	// they are.
	HubProtocol int
	// HubBackoffMin is the first delay before the extension dials the hub
	// again after a failed or dropped connection; it doubles after each
	// failure up to HubBackoffMax and starts again after a
	// browser_hello_ack. Zero means 1 s; tests that restart their hub set
	// less.
	HubBackoffMin time.Duration
	// HubBackoffMax is the longest delay between two dials of the hub.
	// Zero means 30 s. It must not be shorter than HubBackoffMin.
	HubBackoffMax time.Duration
	// Approvals is how the extension answers a hub's approval_request
	// frames (the classic dialect's approvals; on protocol 2 an approval
	// is an interrupt of a chat run, which only a side panel answers, and
	// the reference extension has none). The zero value, ApprovalIgnore,
	// never answers, like a person who never clicks.
	Approvals Approval
	// NativeReconnectDelay is how long the extension waits before it
	// starts the native host again after its port dropped or failed to
	// start. Zero means 5 s, as the reference extension waits.
	NativeReconnectDelay time.Duration
}

// Approval says how the extension answers a hub's approval_request
// frames.
type Approval int

const (
	// ApprovalIgnore sends no answer.
	ApprovalIgnore Approval = iota
	// ApprovalApprove approves every request.
	ApprovalApprove
	// ApprovalReject rejects every request.
	ApprovalReject
)

// String returns the policy's name: "ignore", "approve" or "reject".
func (a Approval) String() string { return iext.Approval(a).String() }

// config returns the internal configuration for opts (nil means all
// defaults); iext.Write validates it.
func config(opts *Options) iext.Config {
	var o Options
	if opts != nil {
		o = *opts
	}
	return iext.Config{
		NativeHost:           o.NativeHost,
		DisableNative:        o.DisableNative,
		NativeReconnectDelay: o.NativeReconnectDelay,
		HubPort:              o.HubPort,
		HubToken:             o.HubToken,
		HubProtocol:          o.HubProtocol,
		HubBackoffMin:        o.HubBackoffMin,
		HubBackoffMax:        o.HubBackoffMax,
		Approvals:            iext.Approval(o.Approvals),
	}
}

// Write writes the extension into dir, creating dir when needed and
// replacing the extension's files there (manifest.json, the scripts and
// config.json), with opts in its configuration file. The browser reads
// config.json again before each connection attempt, so writing a loaded
// folder again takes effect at the next reconnect. opts may be nil.
func Write(dir string, opts *Options) error {
	return iext.Write(dir, config(opts))
}
