package extbridge

import (
	"errors"
	"strconv"
	"strings"
)

// ErrNotConnected is matched (errors.Is) by the error of a browser command
// made while no authenticated extension is connected. The error itself is a
// *[NotConnectedError] whose text is the reference wording agents' prompts
// already know.
var ErrNotConnected = errors.New("extbridge: no browser extension connected")

// ErrTimeout is matched (errors.Is) by a *[TimeoutError]: the extension did not
// answer a browser command in time.
var ErrTimeout = errors.New("extbridge: timed out waiting for the browser extension")

// ErrDisconnected is returned (wrapped) by a browser command whose connection
// was lost or replaced by a newer one before the result arrived. Such calls
// fail at once rather than waiting out their timeout.
var ErrDisconnected = errors.New("extbridge: browser extension disconnected")

// ErrInvalidResult is returned (wrapped) when the extension answered a
// browser command with a result the hub cannot use: a malformed frame, an
// empty or undecodable screenshot image.
var ErrInvalidResult = errors.New("extbridge: invalid result from the browser extension")

// ErrClosed is returned by calls on a [Hub] after Close or Shutdown began,
// except, during Shutdown, by the events and browser commands of a turn
// still running, made with its context ([Hub.Shutdown]).
var ErrClosed = errors.New("extbridge: hub closed")

// ErrServerClosed is returned by Serve and ListenAndServe after Shutdown or
// Close, like http.ErrServerClosed.
var ErrServerClosed = errors.New("extbridge: server closed")

// ErrUnknownTool is what a [ToolHandler] returns (possibly wrapped) for a tool
// name it does not serve. The hub answers such a request with one failed
// tool_result and keeps the connection open.
var ErrUnknownTool = errors.New("extbridge: unknown tool")

// ErrWeakToken is returned by [NewHub] for a token shorter than 16 bytes
// (an empty one included): the token is the hub's only guard against
// other local programs. [NewToken] makes 32-character ones.
var ErrWeakToken = errors.New("extbridge: token shorter than 16 bytes (NewToken makes one)")

// ErrUnknownConversation is what a [Backend]'s ResumeConversation returns
// (possibly wrapped) for an id it does not know. The hub then sends no
// snapshot, as the protocol requires.
var ErrUnknownConversation = errors.New("extbridge: unknown conversation")

// ErrInvalidEvent is returned by [NewChatEvent] and Emit for an AG-UI event that is
// not a JSON object with a non-empty string "type", or a
// TEXT_MESSAGE_CONTENT event with an empty delta.
var ErrInvalidEvent = errors.New("extbridge: invalid AG-UI event")

// ErrFrameTooLarge is matched (errors.Is) by a [*FrameTooLargeError]: the
// extension sent a frame larger than the hub's read limit, and the hub
// closed the connection with 1009 (message too big).
var ErrFrameTooLarge = errors.New("extbridge: frame exceeds the read limit")

// FrameTooLargeError is the cause of a disconnect (reported to the browser
// commands in flight and to OnDisconnect, wrapped in [ErrDisconnected]) when
// the extension sent a frame over [HubOptions.ReadLimit], for example a Read
// of a page with more text than the limit. It matches [ErrFrameTooLarge].
// The frame's full size is not known: the hub stops reading at the limit
// rather than allocate for it.
type FrameTooLargeError struct {
	Limit int64 // the read limit in bytes
}

// Error returns "frame from the browser extension exceeds the read limit of N bytes".
func (e *FrameTooLargeError) Error() string {
	return "frame from the browser extension exceeds the read limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// Unwrap returns [ErrFrameTooLarge].
func (e *FrameTooLargeError) Unwrap() error { return ErrFrameTooLarge }

// PeerClosedError is the cause of a disconnect when the extension closed
// the WebSocket with a close frame. Code is the status it sent (1000
// normal, 1001 going away, …; 1005 when it sent none).
type PeerClosedError struct {
	Code int
}

// Error returns "connection closed by the extension (status N)".
func (e *PeerClosedError) Error() string {
	return "connection closed by the extension (status " + strconv.Itoa(e.Code) + ")"
}

// NotConnectedError is the error of a browser command made while no
// extension is connected. It matches [ErrNotConnected]. Its text is the
// reference wording "no browser extension connected on port N".
type NotConnectedError struct {
	Port int // the hub's port (0 when unknown)
}

// Error returns "no browser extension connected on port N".
func (e *NotConnectedError) Error() string {
	if e.Port == 0 {
		return "no browser extension connected"
	}
	return "no browser extension connected on port " + strconv.Itoa(e.Port)
}

// Unwrap returns [ErrNotConnected].
func (e *NotConnectedError) Unwrap() error { return ErrNotConnected }

// TimeoutError is the error of a browser command the extension did not
// answer in time. It matches [ErrTimeout], and also context.DeadlineExceeded
// when the caller's context deadline was what expired. Its text is the
// reference wording "timed out waiting for the browser extension to ACTION".
type TimeoutError struct {
	Action CommandAction // the browser command's action, e.g. "navigate"
	cause  error         // context.DeadlineExceeded when the caller's deadline passed
}

// Error returns "timed out waiting for the browser extension to ACTION".
func (e *TimeoutError) Error() string {
	return "timed out waiting for the browser extension to " + string(e.Action)
}

// Unwrap returns [ErrTimeout] and, when the caller's deadline expired, the
// context's error.
func (e *TimeoutError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrTimeout, e.cause}
	}
	return []error{ErrTimeout}
}

// Timeout reports true, so that the error satisfies net.Error-style checks.
func (e *TimeoutError) Timeout() bool { return true }

// ErrInvalidCommand is matched (errors.Is) by a [*CommandError] the hub
// raised itself: the command was refused before it was sent.
var ErrInvalidCommand = errors.New("extbridge: invalid browser command")

// CommandError is a failed browser command: either the extension reported
// it as failed (its browser_result carried a non-empty error; Message is
// the extension's text, unchanged), or, with Invalid set, the hub refused
// it before sending it (Message says why; it then matches
// [ErrInvalidCommand]).
type CommandError struct {
	Action  CommandAction // the browser command's action
	Message string        // the extension's error text, or why the hub refused it
	Invalid bool          // refused by the hub; nothing was sent
}

// Error returns the action and the extension's text (at most 512 bytes of
// it), or the reason the hub refused the command.
func (e *CommandError) Error() string {
	if e.Invalid {
		return "extbridge: invalid " + string(e.Action) + " command: " + e.Message
	}
	return "browser extension failed to " + string(e.Action) + ": " + truncate(e.Message, maxErrorText)
}

// Unwrap returns [ErrInvalidCommand] for a command the hub refused, nil
// otherwise.
func (e *CommandError) Unwrap() error {
	if e.Invalid {
		return ErrInvalidCommand
	}
	return nil
}

// actionError is an error of a browser command: its text names the package
// and the action once ("extbridge: navigate: browser extension
// disconnected: …").
type actionError struct {
	action CommandAction
	err    error
}

func (e *actionError) Error() string {
	return "extbridge: " + string(e.action) + ": " + unprefixed(e.err)
}

func (e *actionError) Unwrap() error { return e.err }

// disconnectedError is [ErrDisconnected] with its cause (replaced, lost,
// closed), both matched by errors.Is.
type disconnectedError struct{ cause error }

func (e *disconnectedError) Error() string {
	return ErrDisconnected.Error() + ": " + unprefixed(e.cause)
}

func (e *disconnectedError) Unwrap() []error { return []error{ErrDisconnected, e.cause} }

// unprefixed returns err's text without the package prefix, for errors
// whose wrapper already carries it.
func unprefixed(err error) string {
	return strings.TrimPrefix(err.Error(), "extbridge: ")
}

// maxErrorText bounds how much of a peer's text an error string repeats, so
// that a hostile peer cannot make logs carry megabytes.
const maxErrorText = 512

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
