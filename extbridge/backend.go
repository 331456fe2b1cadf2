package extbridge

import (
	"context"
	"encoding/json"
	"time"
)

// Backend answers the extension panel's frames. The embedding CLI implements
// it; embed [BaseBackend] to get the safe default (empty lists, no-ops) for
// every method not implemented.
//
// One Backend serves both dialects: the hub translates. Calls a protocol-2
// extension scoped to a project carry its directory in ctx ([ProjectDir]);
// protocol 2's run_agent_input reaches UserMessage like a classic
// user_message, and snapshots are rendered as conversation_snapshot or as
// AG-UI MESSAGES_SNAPSHOT.
//
// A Backend never needs the [Hub]: list methods return what the hub sends,
// and UserMessage answers through its [Reply], whose turn runs in a
// goroutine the hub owns and waits for. A Backend can therefore be built
// before the hub and passed in [HubOptions.Backend].
//
// The hub calls a connection's Backend methods one at a time, from that
// connection's read loop, in frame order: new_session is therefore complete
// before a following user_message is handled. Methods should return
// promptly (a reply turn runs with [Reply.StartTurn]; queue other long work
// elsewhere); ctx is cancelled when the connection ends. Different
// connections (a replaced one and its successor) may call the Backend
// concurrently for a short time.
//
// An error from a list method is logged and answered with an empty list.
// Slices may be nil: the hub always sends arrays, never null.
type Backend interface {
	// ListConversations returns the stored conversations; the hub sends
	// them newest first (by UpdatedAt).
	ListConversations(ctx context.Context) ([]Conversation, error)
	// ResumeConversation makes conversation id active and returns its
	// history. ErrUnknownConversation (or a nil snapshot) sends nothing.
	// The hub never calls it with an empty id.
	ResumeConversation(ctx context.Context, id string) (*ConversationSnapshot, error)
	// NewSession starts a fresh conversation and returns its (usually
	// empty) snapshot. The hub calls it for new_session and for the
	// panel's "New chat" button, which sends the user_message "/clear"
	// ([ClearCommand]): a [Backend] never sees "/clear" as a message.
	// opts holds the thread options a protocol-2 new_session carries (all
	// zero otherwise).
	NewSession(ctx context.Context, opts SessionOptions) (*ConversationSnapshot, error)
	// UserMessage delivers a message typed in the panel: queue it for the
	// agent, append its text to the input history, and answer it with a
	// turn started on reply ([Reply.StartTurn]), which ends the panel's
	// "running" state; panels show the user's own message only when the
	// turn echoes it ([Turn.Echo]). Content is trimmed; the hub drops a
	// message with neither content nor attachments.
	UserMessage(ctx context.Context, msg UserMessage, reply *Reply) error
	// ListHistory returns the input history, oldest first. The hub sends at
	// most the last 1000 entries.
	ListHistory(ctx context.Context) ([]string, error)
	// ListSkills returns the agent's skills; the hub sends each name once.
	ListSkills(ctx context.Context) ([]PanelSkill, error)
	// ListModels returns the configured models, the default first, and the
	// current one.
	ListModels(ctx context.Context) (Models, error)
	// SelectModel switches the active model. The hub then sends a fresh
	// models frame and the mode frame, whatever the error.
	SelectModel(ctx context.Context, model string) error
	// Mode returns the current agent mode (sent after the hello ack and
	// after every set_mode). An invalid mode is sent as [ModeStandard].
	Mode(ctx context.Context) (Mode, error)
	// SetMode switches the agent mode. The hub only calls it with a valid
	// mode, and answers a mode frame either way.
	SetMode(ctx context.Context, mode Mode) error
	// Interrupt stops the running turn (a no-op when none runs). Turns run
	// with [Hub.RunTurn] are cancelled by the hub before Interrupt is called.
	Interrupt(ctx context.Context) error
}

// ClearCommand is the user_message text the panel's "New chat" button
// sends. The hub answers it as a new_session ([Backend.NewSession])
// instead of delivering it to [Backend.UserMessage].
const ClearCommand = "/clear"

// BaseBackend is a [Backend] that has nothing: empty lists, mode "standard",
// and no-ops. Embed it in a struct to implement only some methods.
type BaseBackend struct{}

// ListConversations returns no conversations.
func (BaseBackend) ListConversations(context.Context) ([]Conversation, error) { return nil, nil }

// ResumeConversation knows no conversation: it returns [ErrUnknownConversation].
func (BaseBackend) ResumeConversation(context.Context, string) (*ConversationSnapshot, error) {
	return nil, ErrUnknownConversation
}

// NewSession returns an empty snapshot.
func (BaseBackend) NewSession(context.Context, SessionOptions) (*ConversationSnapshot, error) {
	return &ConversationSnapshot{}, nil
}

// UserMessage drops the message, without a reply.
func (BaseBackend) UserMessage(context.Context, UserMessage, *Reply) error { return nil }

// ListHistory returns no history.
func (BaseBackend) ListHistory(context.Context) ([]string, error) { return nil, nil }

// ListSkills returns no skills.
func (BaseBackend) ListSkills(context.Context) ([]PanelSkill, error) { return nil, nil }

// ListModels returns no models.
func (BaseBackend) ListModels(context.Context) (Models, error) { return Models{}, nil }

// SelectModel ignores the request.
func (BaseBackend) SelectModel(context.Context, string) error { return nil }

// Mode returns [ModeStandard].
func (BaseBackend) Mode(context.Context) (Mode, error) { return ModeStandard, nil }

// SetMode ignores the request.
func (BaseBackend) SetMode(context.Context, Mode) error { return nil }

// Interrupt does nothing.
func (BaseBackend) Interrupt(context.Context) error { return nil }

var _ Backend = BaseBackend{}

// Conversation is one stored conversation in the conversations list.
type Conversation struct {
	ID           string
	Title        string    // the title, or a preview of the first message
	UpdatedAt    time.Time // sent as RFC 3339 in UTC
	MessageCount int
}

// ConversationSnapshot is a conversation's history, sent as conversation_snapshot to
// classic extensions and as MESSAGES_SNAPSHOT to protocol-2 ones.
type ConversationSnapshot struct {
	// ConversationID is the conversation's id. Optional: the hub uses it to
	// derive message ids for protocol 2 and as the thread of approvals
	// raised outside a turn.
	ConversationID string
	// Messages are the conversation's message objects (id, role, content,
	// tool_calls, tool_call_id, error, …, in the gateway's snake_case or
	// AG-UI's camelCase), relayed as they are to classic extensions. For
	// protocol 2 the hub renders them as AG-UI 1.0 messages: each gets an
	// id (its own, or ConversationID-index), toolCalls / toolCallId are
	// camelCase, and messages of unknown roles are left out.
	Messages []json.RawMessage
	// ToolResults maps a tool_call_id to whether that execution succeeded,
	// for the calls the CLI has a record of. Optional.
	ToolResults map[string]bool
}

// UserMessage is a message typed in the panel: a classic user_message, or a
// user message of a protocol-2 run_agent_input.
type UserMessage struct {
	Content     string            // trimmed text (protocol 2: the text parts, joined by newlines); may be empty when there are images
	Attachments []json.RawMessage // classic attachments, relayed as sent; nil when none
	Images      []Image           // the attached images (classic attachments of the {filename, mime_type, data} shape, protocol-2 image parts)

	// Protocol 2 only: the run_agent_input's threadId (the conversation the
	// panel follows; "" right after new_session), its runId, and the
	// message's id. The reply turn should be run on ThreadID when set.
	ThreadID, RunID, MessageID string
}

// SessionOptions are the thread options of a protocol-2 new_session. They
// apply to the new conversation only; zero values mean the CLI's defaults.
type SessionOptions struct {
	Model              string   // provider/model id
	Mode               Mode     // only a valid mode is passed
	SystemPrompt       string   // system_prompt
	CustomInstructions string   // custom_instructions
	SandboxDirectories []string // sandbox_directories
	MaxTurns           int      // max_turns
}

// PanelSkill is one entry of the panel's "/" menu: a skill of the CLI's
// agent that the user can invoke. (It is not an agentproto.Skill, which is
// a skill the browser extension detected for a task.)
type PanelSkill struct {
	Name        string     `json:"name"`        // qualified name (plugin:skill for plugin skills)
	Description string     `json:"description"` // one line
	Scope       SkillScope `json:"scope"`       // where the skill is defined
}

// SkillScope is where a [PanelSkill] is defined, which the panel shows
// beside it. The zero value is no scope (sent as "").
type SkillScope string

// The scopes the panel knows.
const (
	SkillScopeProject SkillScope = "project" // the project's own skills
	SkillScopeAgents  SkillScope = "agents"  // the project's AGENTS skills
	SkillScopeUser    SkillScope = "user"    // the user's skills
	SkillScopePlugin  SkillScope = "plugin"  // a plugin's skills (plugin:skill)
	SkillScopeCatalog SkillScope = "catalog" // the catalogue's
)

// Models is the models frame: provider/model ids, the default first, and the
// current one.
type Models struct {
	Models  []string
	Current string
}

// Mode is an agent mode, as its canonical key.
type Mode string

// The agent modes the protocol knows.
const (
	ModeStandard      Mode = "standard"
	ModePlan          Mode = "plan"
	ModeAuto          Mode = "auto"
	ModeAutoWithJudge Mode = "auto-with-judge"
)

// Valid reports whether m is one of the four modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeStandard, ModePlan, ModeAuto, ModeAutoWithJudge:
		return true
	}
	return false
}
