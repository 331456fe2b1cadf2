package mcptools

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxSDKErrorText bounds the plain-text error body kept from the SDK.
const maxSDKErrorText = 1 << 10

// serveJSONRPCErrors serves r with next, turning a plain-text 4xx answer of
// the go-sdk's handler into a JSON-RPC error response with the same status.
// body is the request's (from readBody), so that the error can carry the
// request's id.
func serveJSONRPCErrors(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte) {
	ew := &errorWriter{ResponseWriter: w}
	next.ServeHTTP(ew, r)
	if ew.status != 0 {
		ew.writeJSONRPC(body)
	}
}

// readBody reads a POST body within limit bytes (the SDK's own limit) and
// puts it back for the SDK's handler. A body over the limit, or that failed,
// is nil; the SDK's handler then meets the same error.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) []byte {
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			// The SDK's handler answers the same error (413 or 400)
			// from the same limit; the error carries no id.
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
			body = nil
		} else {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	return body
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// errorWriter passes a response on, except a plain-text 4xx one, which it
// keeps (status and the start of the text) for writeJSONRPC.
type errorWriter struct {
	http.ResponseWriter
	status int // non-zero: the response is kept
	text   []byte
}

func (e *errorWriter) WriteHeader(code int) {
	if code >= 400 && code < 500 && strings.HasPrefix(e.Header().Get("Content-Type"), "text/plain") {
		e.status = code
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *errorWriter) Write(p []byte) (int, error) {
	if e.status == 0 {
		return e.ResponseWriter.Write(p)
	}
	if room := maxSDKErrorText - len(e.text); room > 0 {
		e.text = append(e.text, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (e *errorWriter) Flush() {
	if e.status == 0 {
		_ = http.NewResponseController(e.ResponseWriter).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// writeJSONRPC writes the kept error as a JSON-RPC error response: the id
// of body when it is one request, else null.
func (e *errorWriter) writeJSONRPC(body []byte) {
	text := strings.TrimSpace(string(e.text))
	var id jsonrpc.ID
	code := int64(jsonrpc.CodeInvalidRequest)
	body = bytes.TrimSpace(body)
	switch {
	case len(body) > 0 && !json.Valid(body):
		code = jsonrpc.CodeParseError
	case len(body) > 0 && body[0] == '{':
		if msg, err := decodeMessage(body); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok {
				id = req.ID
			}
		}
	}
	switch {
	case strings.Contains(text, "JSON RPC not handled"):
		code = jsonrpc.CodeMethodNotFound
	case strings.Contains(text, `missing required "params"`):
		code = jsonrpc.CodeInvalidParams
	}
	// The id member is required in an error response, null when unknown
	// (jsonrpc.EncodeMessage would leave it out).
	data, err := json.Marshal(struct {
		Version string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", id.Raw(), &jsonrpc.Error{Code: code, Message: text}})
	if err != nil {
		data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)
	}
	h := e.Header()
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	e.ResponseWriter.WriteHeader(e.status)
	_, _ = e.ResponseWriter.Write(append(data, '\n'))
}
