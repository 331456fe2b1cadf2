package extbridge

import (
	"encoding/json"
	"errors"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Frame types of the extension bridge protocol.
const (
	typeHello          = "browser_hello"
	typeHelloAck       = "browser_hello_ack"
	typeCommand        = "browser_command"
	typeResult         = "browser_result"
	typeListConvs      = "list_conversations"
	typeConversations  = "conversations"
	typeResume         = "resume_conversation"
	typeSnapshot       = "conversation_snapshot"
	typeNewSession     = "new_session"
	typeChatEvent      = "chat_event"
	typeUserMessage    = "user_message"
	typeInterrupt      = "interrupt"
	typeInterrupted    = "interrupted"
	typeListHistory    = "list_history"
	typeHistory        = "history"
	typeListSkills     = "list_skills"
	typeSkills         = "skills"
	typeListModels     = "list_models"
	typeModels         = "models"
	typeSelectModel    = "select_model"
	typeMode           = "mode"
	typeSetMode        = "set_mode"
	typeApprovalReq    = "approval_request"
	typeApprovalResp   = "approval_response"
	typeApprovalDone   = "approval_resolved"
	typeToolRequest    = "tool_request"
	typeToolResult     = "tool_result"
	typePing           = "ping"
	approveAction      = "approve"
	defaultImageMIME   = "image/png"
	maxVersionLen      = 64
	maxHistoryEntries  = 1000
	maxToolNameLen     = 256
	maxRequestIDLength = 128
)

// helloFrame is the extension's first frame.
type helloFrame struct {
	Type             string `json:"type"`
	Token            string `json:"token"`
	ExtensionVersion string `json:"extension_version"`
}

// resultFrame is a browser_result. Every field may be missing or null.
type resultFrame struct {
	Type          string            `json:"type"`
	ID            string            `json:"id"`
	URL           string            `json:"url,omitempty"`
	Title         string            `json:"title,omitempty"`
	Content       string            `json:"content,omitempty"`
	Events        []json.RawMessage `json:"events,omitempty"`
	Error         string            `json:"error,omitempty"`
	Image         string            `json:"image,omitempty"`
	ImageMIMEType string            `json:"image_mime_type,omitempty"`
	Tabs          []Tab             `json:"tabs,omitempty"`

	raw       []byte // the frame as received, for results of new actions
	decodeErr error  // set when the id was readable but the rest was not
}

type resumeFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type userMessageFrame struct {
	Type        string            `json:"type"`
	Content     string            `json:"content"`
	Attachments []json.RawMessage `json:"attachments,omitempty"`
}

type selectModelFrame struct {
	Type  string `json:"type"`
	Model string `json:"model"`
}

type setModeFrame struct {
	Type string `json:"type"`
	Mode string `json:"mode"`
}

type approvalResponseFrame struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Action    string `json:"action"`
}

type toolRequestFrame struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	ToolName string `json:"tool_name"`
	ToolArgs string `json:"tool_args"`

	decodeErr error // set when the id was readable but the rest was not
}

// bareFrame is a frame whose type is all it carries (list_*, new_session,
// interrupt, ping).
type bareFrame struct {
	Type string `json:"type"`
}

// errNotFrame is returned by decodeInbound for input that is not a JSON
// object with a string "type".
var errNotFrame = errors.New("extbridge: not a protocol frame")

// decodeInbound parses one frame sent by the extension. It returns the
// frame's type and, for the types the hub understands, a pointer to the
// decoded frame struct (nil for unknown types, which are ignored). Keys are
// matched exactly and duplicate or case-variant keys are refused, so that
// the hub never acts on a field the extension's JavaScript would read
// differently. A browser_result whose id is readable but whose other fields
// are malformed decodes to a *resultFrame with decodeErr set, so that the
// waiting command fails at once instead of timing out.
func decodeInbound(data []byte) (typ string, frame any, err error) {
	var rawType, rawID []byte
	err = strictjson.Fields(data, func(key, value []byte) error {
		switch string(key) {
		case "type":
			rawType = value
		case "id":
			rawID = value
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if typ = plainString(rawType); typ == "" {
		if rawType == nil || json.Unmarshal(rawType, &typ) != nil || typ == "" {
			return "", nil, errNotFrame
		}
	}
	switch typ {
	case typeHello:
		frame = new(helloFrame)
	case typeResult:
		f := new(resultFrame)
		if err := strictjson.Unmarshal(data, f); err != nil {
			id, ok := readableID(rawID)
			if !ok {
				return typ, nil, err
			}
			return typ, &resultFrame{Type: typ, ID: id, decodeErr: err}, nil
		}
		f.raw = data
		return typ, f, nil
	case typeToolRequest:
		// A request whose id is readable is answered (with a failed
		// result) even when the rest is not: never a dropped id.
		f := new(toolRequestFrame)
		if err := strictjson.Unmarshal(data, f); err != nil {
			id, ok := readableID(rawID)
			if !ok {
				return typ, nil, err
			}
			return typ, &toolRequestFrame{Type: typ, ID: id, decodeErr: err}, nil
		}
		return typ, f, nil
	case typeSetMode, typeSelectModel:
		// Always answered: a value that is not a string is an unknown
		// value, ignored.
		var f any = &setModeFrame{Type: typ}
		if typ == typeSelectModel {
			f = &selectModelFrame{Type: typ}
		}
		if strictjson.Unmarshal(data, f) != nil {
			if typ == typeSelectModel {
				return typ, &selectModelFrame{Type: typ}, nil
			}
			return typ, &setModeFrame{Type: typ}, nil
		}
		return typ, f, nil
	case typeResume:
		frame = new(resumeFrame)
	case typeUserMessage:
		frame = new(userMessageFrame)
	case typeApprovalResp:
		frame = new(approvalResponseFrame)
	case typeListConvs, typeNewSession, typeListHistory, typeListSkills, typeListModels,
		typeInterrupt, typePing:
		return typ, &bareFrame{Type: typ}, nil
	default:
		return typ, nil, nil
	}
	if err := strictjson.Unmarshal(data, frame); err != nil {
		return typ, nil, err
	}
	return typ, frame, nil
}

// readableID returns the string value of a frame's raw id member, when it
// is a non-empty string.
func readableID(raw []byte) (string, bool) {
	var id string
	if raw == nil || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", false
	}
	return id, true
}

// plainString returns the contents of a JSON string literal without escapes
// (a fast path for the common case), or "" when raw is anything else.
func plainString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			return ""
		}
	}
	return string(inner)
}

// Outbound frames. Slices are never nil when marshalled: the extension
// expects arrays, never null.

type commandFrame struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	Action     string `json:"action"`
	URL        string `json:"url,omitempty"`
	Selector   string `json:"selector,omitempty"`
	Text       string `json:"text,omitempty"`
	PressEnter bool   `json:"press_enter,omitempty"`
	TimeoutMS  int64  `json:"timeout_ms"`
}

type conversationsFrame struct {
	Type          string             `json:"type"`
	Conversations []wireConversation `json:"conversations"`
}

type wireConversation struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	UpdatedAt    string `json:"updated_at"`
	MessageCount int    `json:"message_count"`
}

type snapshotFrame struct {
	Type        string            `json:"type"`
	Messages    []json.RawMessage `json:"messages"`
	ToolResults map[string]bool   `json:"tool_results,omitempty"`
}

type historyFrame struct {
	Type    string   `json:"type"`
	History []string `json:"history"`
}

type skillsFrame struct {
	Type   string  `json:"type"`
	Skills []Skill `json:"skills"`
}

type modelsFrame struct {
	Type    string   `json:"type"`
	Models  []string `json:"models"`
	Current string   `json:"current"`
}

type modeFrame struct {
	Type string `json:"type"`
	Mode Mode   `json:"mode"`
}

type approvalRequestFrame struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	ToolName  string `json:"tool_name"`
	ToolArgs  string `json:"tool_args"`
}

type approvalResolvedFrame struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

type toolResultFrame struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Success bool   `json:"success"`
	Output  string `json:"output"`
	Error   string `json:"error"`
}

var (
	helloAckJSON    = []byte(`{"type":"browser_hello_ack"}`)
	interruptedJSON = []byte(`{"type":"interrupted"}`)
)

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
