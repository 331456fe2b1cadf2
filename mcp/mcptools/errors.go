package mcptools

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddErrorCodes gives every error a request of s ends with a JSON-RPC code:
// the go-sdk sends an error that is not a *jsonrpc.Error (a handler's plain
// error, its own "duplicate initialize") with code 0, which JSON-RPC does not
// define. Such an error becomes -32600 Invalid Request for initialize (a
// second one) and -32603 Internal error otherwise, with its message
// unchanged; coded errors, and the context's errors of a cancelled request,
// pass as they are.
func AddErrorCodes(s *mcp.Server) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err == nil {
				return res, nil
			}
			var coded *jsonrpc.Error
			if errors.As(err, &coded) && coded.Code != 0 ||
				errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return res, err // a cancelled request is the SDK's to answer, or not
			}
			code := int64(jsonrpc.CodeInternalError)
			if method == "initialize" {
				code = jsonrpc.CodeInvalidRequest
			}
			return res, &jsonrpc.Error{Code: code, Message: err.Error()}
		}
	})
}

// errPrefix starts the Error() text of this package's sentinels, for Go
// callers; a model reading a tool result is told the same without it.
const errPrefix = "mcptools: "

// modelText is err's text in a tool result: err.Error(), with the text of
// this package's sentinel it wraps (if any) without errPrefix, which tells a
// model nothing.
func modelText(err error) string {
	text := err.Error()
	for _, sentinel := range []error{ErrBridgeUnreachable, ErrApprovalDenied, ErrApprovalUnavailable, ErrHubNoResult} {
		if errors.Is(err, sentinel) {
			return strings.Replace(text, sentinel.Error(), strings.TrimPrefix(sentinel.Error(), errPrefix), 1)
		}
	}
	return text
}

// toolError is err as a typed tool handler returns it: the go-sdk makes its
// Error() the result's text, so that is [modelText], and keeps it for
// middleware (mcp.CallToolResult.GetError), where errors.Is and errors.As
// see err through it.
type toolError struct{ err error }

func (e toolError) Error() string { return modelText(e.err) }
func (e toolError) Unwrap() error { return e.err }
