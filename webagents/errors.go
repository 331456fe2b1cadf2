package webagents

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Code is the machine-readable code of a WebAgents error, such as
// "unauthorized". The constants below are the protocol's; a handler may
// declare any other code (for example "not_found") in its *[Error].
type Code string

// Error codes of the WebAgents response envelope.
const (
	CodeInvalidRequest        Code = "invalid_request"         // 400
	CodeUnsupportedVersion    Code = "unsupported_version"     // 400
	CodeTooManyOperations     Code = "too_many_operations"     // 400
	CodeUnknownAction         Code = "unknown_action"          // 400
	CodeInvalidInput          Code = "invalid_input"           // 400: schema failure
	CodeInvalidGraph          Code = "invalid_graph"           // 400: unknown id, self-dependency, cycle
	CodeReferencesDisabled    Code = "references_disabled"     // 400
	CodeUnresolvedReference   Code = "unresolved_reference"    // 400
	CodePayloadTooLarge       Code = "payload_too_large"       // 413
	CodeUnsupportedMediaType  Code = "unsupported_media_type"  // 415
	CodeMethodNotAllowed      Code = "method_not_allowed"      // 405
	CodeForbiddenOrigin       Code = "forbidden_origin"        // 403
	CodeRateLimited           Code = "rate_limited"            // 429
	CodeTimeout               Code = "timeout"                 // 504
	CodeInternal              Code = "internal"                // 500
	CodeResultTooLarge        Code = "result_too_large"        // 500
	CodeUnauthorized          Code = "unauthorized"            // 401
	CodeIdempotencyKeyReused  Code = "idempotency_key_reused"  // 422
	CodeIdempotencyInProgress Code = "idempotency_in_progress" // 409
	// CodeIdempotencyUnavailable (503, with Retry-After) refuses a request
	// with an Idempotency-Key when the store cannot take one more key (full,
	// or this client holds its whole share) or is unreachable. Nothing ran.
	CodeIdempotencyUnavailable Code = "idempotency_unavailable" // 503
	// CodeUnavailable (503) refuses a batch that arrives while the [Handler]
	// is shutting down. Nothing ran.
	CodeUnavailable Code = "unavailable" // 503
)

// Error is a WebAgents protocol error: the status, code and message a server
// sends for a request or an operation, and what a client receives.
//
// Action handlers return an *Error to fail an operation with a message the
// agent may see, for example
//
//	return nil, &webagents.Error{Status: 401, Code: webagents.CodeUnauthorized, Message: "Sign in first."}
//
// Any other error a handler returns is reported as 500 "internal" with a
// generic message, so that internals never leak.
type Error struct {
	Status    int    // HTTP status; 0 means the status Code implies (see HTTPStatus), else 500
	Code      Code   // machine-readable code, e.g. "unauthorized"
	Message   string // human-readable message shown to the agent
	Operation string // id of the operation it belongs to, "" for request-level errors
	// RetryAfter, when positive on a request-level error, is sent as the
	// Retry-After header (whole seconds, rounded up). It is not part of the
	// JSON envelope.
	RetryAfter time.Duration
}

// Error returns the message prefixed with the code.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("webagents: ")
	if e.Operation != "" {
		b.WriteString("operation ")
		b.WriteString(strconv.Quote(e.Operation))
		b.WriteString(": ")
	}
	b.WriteString(string(e.Code))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Is reports whether target is an *[Error] with the same [Code], so that
// errors.Is(err, &webagents.Error{Code: "unauthorized"}) matches by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

// HTTPStatus returns e.Status, or the status its code implies when Status is
// zero or not a 4xx/5xx status.
func (e *Error) HTTPStatus() int {
	if e.Status >= 400 && e.Status <= 599 {
		return e.Status
	}
	if s, ok := codeStatus[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

var codeStatus = map[Code]int{
	CodeInvalidRequest:         400,
	CodeUnsupportedVersion:     400,
	CodeTooManyOperations:      400,
	CodeUnknownAction:          400,
	CodeInvalidInput:           400,
	CodeInvalidGraph:           400,
	CodeReferencesDisabled:     400,
	CodeUnresolvedReference:    400,
	CodePayloadTooLarge:        413,
	CodeUnsupportedMediaType:   415,
	CodeMethodNotAllowed:       405,
	CodeForbiddenOrigin:        403,
	CodeRateLimited:            429,
	CodeTimeout:                504,
	CodeInternal:               500,
	CodeResultTooLarge:         500,
	CodeUnauthorized:           401,
	CodeIdempotencyKeyReused:   422,
	CodeIdempotencyInProgress:  409,
	CodeIdempotencyUnavailable: 503,
	CodeUnavailable:            503,
}

// errorf builds a protocol error with the status its code implies.
func errorf(code Code, msg string) *Error {
	return &Error{Status: codeStatus[code], Code: code, Message: msg}
}

// internalError is the only message a client sees for a failure the server
// did not declare.
func internalError() *Error {
	return &Error{Status: 500, Code: CodeInternal, Message: "Internal error."}
}

// Problem is one finding of manifest validation or of the checker: where
// (a JSON path such as "$.actions['cart.add'].effect", or a document such as
// "GET /webagents.md") and what.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// String returns "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError reports an invalid manifest or document. It lists every
// problem found, not just the first.
type ValidationError struct {
	Problems []Problem
}

// Error summarises the problems.
func (e *ValidationError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "webagents: invalid manifest"
	case 1:
		return "webagents: invalid manifest: " + e.Problems[0].String()
	default:
		return "webagents: invalid manifest: " + e.Problems[0].String() +
			" (and " + strconv.Itoa(len(e.Problems)-1) + " more)"
	}
}

// Sentinel errors, matched with errors.Is.
var (
	// ErrNoManifest means a document holds no manifest: neither raw JSON nor
	// a webagents fenced block (for example the unrelated heading-based
	// webagents.md format). Discovery reports it as absent.
	ErrNoManifest = errors.New("webagents: no manifest in document")
	// ErrDocumentTooLarge means a discovery document exceeds [MaxDocumentChars].
	ErrDocumentTooLarge = errors.New("webagents: document too large")
	// ErrUnsafeRedirect means discovery was redirected to another origin or
	// a redirect was refused.
	ErrUnsafeRedirect = errors.New("webagents: unsafe redirect")
	// ErrTooManyRedirects means discovery followed more than [MaxRedirects] redirects.
	ErrTooManyRedirects = errors.New("webagents: too many redirects")
	// ErrCrossOriginEndpoint means a manifest's endpoint does not resolve to
	// the page's origin.
	ErrCrossOriginEndpoint = errors.New("webagents: endpoint is not same-origin")
	// ErrConsentRequired means [Client.Run] refused, before sending anything,
	// a batch holding writes or irreversible actions the caller did not allow.
	ErrConsentRequired = errors.New("webagents: consent required")
	// ErrNotInScope means [Client.Run] refused an action that is not published
	// for the page's path.
	ErrNotInScope = errors.New("webagents: action not in scope for this page")
	// ErrNotAvailable means [Client.Discover], [Client.Run] or
	// [Client.DiscoverAndRun] found no usable manifest; the caller should
	// fall back to normal browsing. The *[DiscoveryError] says why.
	ErrNotAvailable = errors.New("webagents: not available on this page")
	// ErrIdempotencyInProgress is returned by an [IdempotencyStore]'s Reserve
	// when the key's first request is still running.
	ErrIdempotencyInProgress = errors.New("webagents: idempotent request in progress")
)
