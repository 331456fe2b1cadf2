package agentproto

// DefaultMaxRequestSize is the largest request frame a bridge server reads
// by default, and so the largest a [Client] sends by default
// ([ClientOptions].MaxRequestSize). A larger frame is answered with an
// error and ends the connection (the stream cannot be resynchronised).
// Requests between Chrome's 1 MiB limit and this size are answered with a
// clear error by the native host and the connection stays up.
const DefaultMaxRequestSize = 4 << 20
