package extbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

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
	typeRunAgentInput  = "run_agent_input"
	approveAction      = "approve"
	defaultImageMIME   = "image/png"
	maxVersionLen      = 64
	maxHistoryEntries  = 1000
	maxToolNameLen     = 256
	maxRequestIDLength = 128
)

// helloFrame is the extension's first frame. protocol_version is kept raw:
// a value that is not an integer is a classic hello, not a refused one (the
// reference CLI's handshake is lenient).
type helloFrame struct {
	Type             string          `json:"type"`
	Token            string          `json:"token"`
	ExtensionVersion string          `json:"extension_version"`
	Client           string          `json:"client"`
	ProtocolVersion  json.RawMessage `json:"protocol_version"`
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

// Frames of both dialects decode into the same structs: protocol 2 adds
// project_dir to the project-scoped frames, which classic extensions never
// send, and the dispatcher reads the fields its connection's dialect uses.

type resumeFrame struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	ProjectDir string `json:"project_dir"`
}

type userMessageFrame struct {
	Type        string            `json:"type"`
	Content     string            `json:"content"`
	Attachments []json.RawMessage `json:"attachments,omitempty"`
}

type selectModelFrame struct {
	Type       string `json:"type"`
	Model      string `json:"model"`
	ProjectDir string `json:"project_dir"`
}

type setModeFrame struct {
	Type       string `json:"type"`
	Mode       string `json:"mode"`
	ProjectDir string `json:"project_dir"`
}

// approvalResponseFrame is classic {request_id, action} or protocol 2
// {tool_call_id, approved, scope?}.
type approvalResponseFrame struct {
	Type       string `json:"type"`
	RequestID  string `json:"request_id"`
	Action     string `json:"action"`
	ToolCallID string `json:"tool_call_id"`
	Approved   bool   `json:"approved"`
	Scope      string `json:"scope"`
}

type toolRequestFrame struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	ToolName   string `json:"tool_name"`
	ToolArgs   string `json:"tool_args"`
	ProjectDir string `json:"project_dir"`

	decodeErr error // set when the id was readable but the rest was not
}

// bareFrame is a frame whose type is all it carries besides, in protocol 2,
// the project dir (list_*, interrupt, ping).
type bareFrame struct {
	Type       string `json:"type"`
	ProjectDir string `json:"project_dir"`
}

// newSessionFrame is new_session: bare in classic; in protocol 2 it names
// the project and may carry thread options.
type newSessionFrame struct {
	Type               string   `json:"type"`
	ProjectDir         string   `json:"project_dir"`
	Model              string   `json:"model"`
	Mode               string   `json:"mode"`
	SystemPrompt       string   `json:"system_prompt"`
	CustomInstructions string   `json:"custom_instructions"`
	SandboxDirectories []string `json:"sandbox_directories"`
	MaxTurns           int      `json:"max_turns"`
}

// runAgentInputFrame is protocol 2's run_agent_input: an AG-UI
// RunAgentInput carrying new user messages, or resume entries answering the
// open interrupts of the thread's suspended run.
type runAgentInputFrame struct {
	Type  string         `json:"type"`
	Input *runAgentInput `json:"input"`
}

type runAgentInput struct {
	ThreadID string         `json:"threadId"`
	RunID    string         `json:"runId"`
	Messages []inputMessage `json:"messages"`
	Resume   []resumeEntry  `json:"resume"`
}

type inputMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type resumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// inboundFrames is the codec's table: each frame type the hub understands
// and the struct it decodes into. Frames of other types are ignored. The
// browser_result, tool_request, set_mode and select_model frames have
// their own decoding in decodeInbound (answered even when malformed).
var inboundFrames = map[string]func() any{
	typeHello:         func() any { return new(helloFrame) },
	typeResult:        nil,
	typeToolRequest:   nil,
	typeSetMode:       nil,
	typeSelectModel:   nil,
	typeResume:        func() any { return new(resumeFrame) },
	typeUserMessage:   func() any { return new(userMessageFrame) },
	typeApprovalResp:  func() any { return new(approvalResponseFrame) },
	typeNewSession:    func() any { return new(newSessionFrame) },
	typeRunAgentInput: func() any { return new(runAgentInputFrame) },
	typeListConvs:     func() any { return new(bareFrame) },
	typeListHistory:   func() any { return new(bareFrame) },
	typeListSkills:    func() any { return new(bareFrame) },
	typeListModels:    func() any { return new(bareFrame) },
	typeInterrupt:     func() any { return new(bareFrame) },
	typePing:          func() any { return new(bareFrame) },
}

// inboundNames interns the table's type names, so that knownType returns
// them without allocating.
var inboundNames = func() map[string]string {
	m := make(map[string]string, len(inboundFrames))
	for name := range inboundFrames {
		m[name] = name
	}
	return m
}()

// errNotFrame is returned by decodeInbound for input that is not a JSON
// object with a string "type".
var errNotFrame = errors.New("extbridge: not a protocol frame")

// decodeInbound parses one frame sent by the extension. It returns the
// frame's type and, for the types the hub understands, a pointer to the
// decoded frame struct (nil for unknown types, which are ignored). Keys are
// matched exactly and duplicate or case-variant keys are refused, so that
// the hub never acts on a field the extension's JavaScript would read
// differently. A browser_result or tool_request whose id is readable but
// whose other fields are malformed decodes with decodeErr set, so that the
// waiting command fails at once (or the request is answered) instead of
// timing out.
//
// A browser_result, the frame on the hot path, is decoded from the one walk
// over the frame's members (strictjson.Fields, which has checked the whole
// frame): no second parse of the frame, which for a screenshot is megabytes.
func decodeInbound(data []byte) (typ string, frame any, err error) {
	if !utf8.Valid(data) {
		return decodeInvalidUTF8(data)
	}
	var rawType, rawID []byte
	var res resultMembers
	err = strictjson.Fields(data, func(key, value []byte) error {
		switch string(key) {
		case "type":
			rawType = value
		case "id":
			rawID = value
		default:
			res.set(key, value)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if typ = knownType(rawType); typ == "" {
		// A local for the decoder: the named result would move to the heap
		// for every frame, known types included.
		var named string
		if rawType == nil || json.Unmarshal(rawType, &named) != nil || named == "" {
			return "", nil, errNotFrame
		}
		typ = named
	}
	switch typ {
	case typeResult:
		f, err := res.decode(rawID, data)
		if err != nil {
			id, ok := readableID(rawID)
			if !ok {
				return typ, nil, err
			}
			return typ, &resultFrame{Type: typ, ID: id, decodeErr: err}, nil
		}
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
	default:
		mk := inboundFrames[typ]
		if mk == nil {
			return typ, nil, nil
		}
		frame = mk()
	}
	if err := strictjson.Unmarshal(data, frame); err != nil {
		return typ, nil, err
	}
	return typ, frame, nil
}

// errInvalidUTF8 refuses a frame whose text is not valid UTF-8. The module's
// rule for JSON text from outside: refused with a clear error, never
// repaired (encoding/json would silently replace the bad bytes with
// U+FFFD, so that the hub would act on text the extension never sent).
var errInvalidUTF8 = errors.New("extbridge: frame is not valid UTF-8")

// decodeInvalidUTF8 refuses a frame that is not valid UTF-8. A
// browser_result or tool_request whose type and id are readable still
// decodes, with decodeErr set, so that the waiting command fails at once
// and the tool request gets its one failed result. The id is read from a
// repaired copy: an id that contained bad bytes holds U+FFFD and so matches
// nothing the hub sent.
func decodeInvalidUTF8(data []byte) (string, any, error) {
	var rawType, rawID []byte
	err := strictjson.Fields(bytes.ToValidUTF8(data, []byte("\uFFFD")), func(key, value []byte) error {
		switch string(key) {
		case "type":
			rawType = value
		case "id":
			rawID = value
		}
		return nil
	})
	typ := knownType(rawType)
	id, ok := readableID(rawID)
	if err != nil || !ok || strings.ContainsRune(id, utf8.RuneError) {
		return typ, nil, errInvalidUTF8
	}
	switch typ {
	case typeResult:
		return typ, &resultFrame{Type: typ, ID: id, decodeErr: errInvalidUTF8}, nil
	case typeToolRequest:
		return typ, &toolRequestFrame{Type: typ, ID: id, decodeErr: errInvalidUTF8}, nil
	}
	return typ, nil, errInvalidUTF8
}

// knownType returns the frame type raw (a JSON string without escapes)
// names when the hub knows it, without allocating; "" otherwise.
func knownType(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	return inboundNames[string(raw[1:len(raw)-1])]
}

// resultMembers are the raw values of a browser_result's members, as
// strictjson.Fields found them (exact keys; the frame already checked).
type resultMembers struct {
	url, title, content, events, errText, image, mime, tabs []byte
}

func (m *resultMembers) set(key, value []byte) {
	switch string(key) {
	case "url":
		m.url = value
	case "title":
		m.title = value
	case "content":
		m.content = value
	case "events":
		m.events = value
	case "error":
		m.errText = value
	case "image":
		m.image = value
	case "image_mime_type":
		m.mime = value
	case "tabs":
		m.tabs = value
	}
}

// decode builds the result frame. Missing and null members are zero
// values; a member of the wrong type is an error.
func (m *resultMembers) decode(rawID, data []byte) (*resultFrame, error) {
	f := &resultFrame{Type: typeResult, raw: data}
	for _, s := range []struct {
		raw []byte
		dst *string
	}{{rawID, &f.ID}, {m.url, &f.URL}, {m.title, &f.Title}, {m.content, &f.Content},
		{m.errText, &f.Error}, {m.image, &f.Image}, {m.mime, &f.ImageMIMEType}} {
		if err := jsonString(s.raw, s.dst); err != nil {
			return nil, err
		}
	}
	if len(m.events) > 0 && string(m.events) != "null" && string(m.events) != "[]" {
		if err := json.Unmarshal(m.events, &f.Events); err != nil {
			return nil, err
		}
	}
	if len(m.tabs) > 0 && string(m.tabs) != "null" {
		if err := strictjson.Unmarshal(m.tabs, &f.Tabs); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// jsonString decodes a JSON string value (already checked as JSON) into
// dst: a missing value or null leaves dst empty, anything but a string is
// an error. Strings without escapes and with valid UTF-8, the usual case,
// are converted without encoding/json.
func jsonString(raw []byte, dst *string) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if len(raw) >= 2 && raw[0] == '"' {
		inner := raw[1 : len(raw)-1]
		plain, ascii := true, true
		for _, c := range inner {
			if c == '\\' {
				plain = false
				break
			}
			if c >= 0x80 {
				ascii = false
			}
		}
		if plain && (ascii || utf8.Valid(inner)) {
			*dst = string(inner)
			return nil
		}
	}
	return json.Unmarshal(raw, dst)
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
	Type   string       `json:"type"`
	Skills []PanelSkill `json:"skills"`
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
