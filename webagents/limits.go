package webagents

import "time"

// Protocol constants.
const (
	// Version is the manifest and batch version this package speaks.
	Version = "0.1"
	// Protocol is the value of the response envelope's "protocol" member.
	Protocol = "webagents/0.1"
	// MarkdownPath is the first discovery path, served as text/markdown.
	MarkdownPath = "/webagents.md"
	// WellKnownPath is the second discovery path, served as application/json.
	WellKnownPath = "/.well-known/webagents.json"
	// TrustUntrusted marks the model-facing view of a manifest.
	TrustUntrusted = "untrusted_external_data"
)

// Limits of the protocol. "Chars" are Unicode code points; "Bytes" are bytes.
const (
	MaxDocumentChars      = 64_000    // a discovery document
	MaxEndpointChars      = 2_048     // workflow.endpoint
	MaxOperationsLimit    = 32        // the largest workflow.maxOperations
	MaxActions            = 64        // actions per manifest
	MaxActionNameChars    = 64        // an action name
	MaxDescriptionChars   = 500       // an action description
	MaxSchemaChars        = 12_000    // an inputSchema or outputSchema, serialized
	MaxPathPrefixes       = 16        // pathPrefixes per action
	MaxPathPrefixChars    = 256       // one path prefix
	MaxMinIntervalMs      = 2_000     // workflow.pacing.minIntervalMs
	MaxOperationIDChars   = 64        // an operation id
	MaxInputChars         = 128_000   // one operation input, serialized
	DefaultMaxBodyChars   = 128_000   // a batch request body; configurable, never below this
	TransportLimitBytes   = 1 << 20   // requests and responses on the wire (1 MiB)
	DefaultMaxResultBytes = 1_000_000 // a batch's results member (1 MB); the envelope's rest fits the transport cap
	MaxRedirects          = 5         // redirects followed by discovery, same origin only
	MaxIdempotencyKeyLen  = 255       // Idempotency-Key header value, in bytes
)

// Defaults.
const (
	DefaultMaxOperations     = 32
	DefaultMaxConcurrency    = 4 // capped by maxOperations; 1 when parallel is false
	DefaultDeadline          = 30 * time.Second
	DefaultIdempotencyWindow = 24 * time.Hour
)

// maxUTF8Bytes is the most bytes n code points can take.
func maxUTF8Bytes(n int) int { return 4 * n }
