package webagents

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Response is the JSON envelope of every response of the workflow endpoint,
// as a client decodes it.
type Response struct {
	OK       bool   `json:"ok"`
	Protocol string `json:"protocol"`
	Pacing   Pacing `json:"pacing"`
	// Error is the top-level message of a failure (what the real client shows).
	Error     string                     `json:"error,omitempty"`
	Code      Code                       `json:"code,omitempty"`
	Operation string                     `json:"operation,omitempty"`
	Results   map[string]json.RawMessage `json:"results,omitempty"`
	Errors    map[string]OperationError  `json:"errors,omitempty"`
	Skipped   []string                   `json:"skipped,omitempty"`
}

// OperationError is one entry of a response's "errors" member.
type OperationError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

const genericFailure = "The operation failed."

// appendEnvelope writes the envelope for an outcome (out non-nil) or a
// request-level error (reqErr non-nil), keeping results in list order.
func appendEnvelope(buf *bytes.Buffer, pacing Pacing, out *Outcome, reqErr *Error) {
	failure := reqErr
	if out != nil {
		failure = out.Err
	}
	buf.WriteString(`{"ok":`)
	buf.WriteString(strconv.FormatBool(failure == nil))
	buf.WriteString(`,"protocol":"` + Protocol + `","pacing":{"minIntervalMs":`)
	buf.WriteString(strconv.Itoa(pacing.MinIntervalMs))
	buf.WriteString(`,"maxConcurrency":`)
	buf.WriteString(strconv.Itoa(pacing.MaxConcurrency))
	buf.WriteByte('}')
	if failure != nil {
		msg := failure.Message
		if msg == "" {
			msg = genericFailure
		}
		buf.WriteString(`,"error":`)
		writeJSONString(buf, msg)
		buf.WriteString(`,"code":`)
		writeJSONString(buf, string(failure.Code))
		if failure.Operation != "" {
			buf.WriteString(`,"operation":`)
			writeJSONString(buf, failure.Operation)
		}
	}
	if out == nil {
		buf.WriteString("}")
		return
	}
	buf.WriteString(`,"results":{`)
	first := true
	for i, r := range out.Results {
		if r == nil {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		writeJSONString(buf, out.Plan.Operations[i].ID)
		buf.WriteByte(':')
		buf.Write(r)
	}
	buf.WriteByte('}')
	if failure != nil {
		buf.WriteString(`,"errors":{`)
		first = true
		for i, e := range out.Errors {
			if e == nil {
				continue
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			msg := e.Message
			if msg == "" {
				msg = genericFailure
			}
			writeJSONString(buf, out.Plan.Operations[i].ID)
			buf.WriteString(`:{"code":`)
			writeJSONString(buf, string(e.Code))
			buf.WriteString(`,"message":`)
			writeJSONString(buf, msg)
			buf.WriteString(`,"status":`)
			buf.WriteString(strconv.Itoa(e.HTTPStatus()))
			buf.WriteByte('}')
		}
		buf.WriteString(`},"skipped":[`)
		for i, id := range out.Skipped {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, id)
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
}

// writeJSONString writes s as a JSON string. Operation ids and codes are
// plain ASCII and take the fast path.
func writeJSONString(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			buf.Write(b)
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}
