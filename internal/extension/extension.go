package extension

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ID is the extension's id, fixed by the key in its manifest: every
// Chromium profile that loads the extension gives it this id.
const ID = "lllgkhehhfideabmfhnlkocagdfegbhf"

// Key is the manifest's "key": the base64 DER public key that fixes ID.
// Only its public half exists; the extension is never packed or signed.
const Key = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwPrA4dYzu4ri//cGGqzlQ1sKTjyu4WOIryZvyRfWf46bD47MXaDlqDZyYWkTmmaGbmwTadqM/ot4xbS4Bz2ss8sKKQHbaX+1qQ3QCgXo5rePFvOzPNm1ujzPguUrV2RpSoEA2IZVg3cFPz3OpeB23OvwRFC4BldlLnlHFmvrJKVXKG4GjAuxTDIP8XbP1b7XDtbxJU8BERdSV7L0l442N1RuC9Jh31UcIbQ5GoRmk8OamK/MnVa4w6MSCjPeZeLFFAiECk5V740plwAHT/jKMCn910ii4xUAMAfPFGuecuDJ45ffohl3ZkWvlgM9dOHQi79M3GEiwJKA7x7b8wlfpwIDAQAB"

// Origin is the Origin header the extension's WebSocket sends to a hub.
const Origin = "chrome-extension://" + ID

// NativeOrigin is the extension's entry for a native host manifest's
// allowed_origins (with the trailing slash Chrome requires).
const NativeOrigin = "chrome-extension://" + ID + "/"

// NativeHostName is the native messaging host the extension connects to
// unless Config.NativeHost says otherwise.
const NativeHostName = "com.weboperator.bridge"

// Version is the extension's version, as its manifest and its
// browser_hello's extension_version say.
const Version = "0.1.0"

// ConfigFile is the name of the configuration file Write puts into the
// extension folder, beside the manifest.
const ConfigFile = "config.json"

//go:embed files
var files embed.FS

// Files returns the extension's files, without the configuration file.
func Files() fs.FS {
	sub, err := fs.Sub(files, "files")
	if err != nil {
		panic(err) // the embedded tree always has "files"
	}
	return sub
}

// Approval says how the extension answers an extension bridge
// approval_request.
type Approval int

const (
	// ApprovalIgnore sends no answer, like a person who never clicks.
	ApprovalIgnore Approval = iota
	// ApprovalApprove answers every request with "approve".
	ApprovalApprove
	// ApprovalReject answers every request with "reject".
	ApprovalReject
)

// String returns the policy's name in config.json: "ignore", "approve"
// or "reject".
func (a Approval) String() string {
	switch a {
	case ApprovalIgnore:
		return "ignore"
	case ApprovalApprove:
		return "approve"
	case ApprovalReject:
		return "reject"
	}
	return "Approval(" + strconv.Itoa(int(a)) + ")"
}

// Config is what the extension reads from its configuration file. The
// zero value connects the native messaging side with the reference's
// timings and leaves the extension bridge side off.
type Config struct {
	// HubPort is the TCP port of the extension bridge hub; the extension
	// dials ws://127.0.0.1:<HubPort>/ws. Zero turns the extension bridge
	// side off.
	HubPort int
	// HubToken is the shared secret sent in browser_hello. It is required
	// when HubPort is set, and it is written into the extension folder's
	// configuration file (mode 0600).
	HubToken string
	// HubBackoffMin is the first reconnect delay after the hub connection
	// fails or drops; it doubles after each failure up to HubBackoffMax
	// and is reset by a browser_hello_ack. Zero means 1 s.
	HubBackoffMin time.Duration
	// HubBackoffMax is the longest reconnect delay. Zero means 30 s.
	HubBackoffMax time.Duration
	// HubPingInterval is how often the extension sends {"type":"ping"}.
	// Zero means 20 s.
	HubPingInterval time.Duration
	// Approvals is how approval_request frames are answered. The zero
	// value is ApprovalIgnore. It also answers protocol 2's tool_call
	// interrupts (a resume entry "resolved" or "cancelled") and the CUSTOM
	// approval_request of a panel tool request (approval_response
	// {tool_call_id, approved}).
	Approvals Approval

	// HubProtocol is the protocol_version of the hello: 0 sends none (the
	// classic dialect), 2 the infer daemon binding dialect of the newest
	// opentask extension (bare AG-UI events, interrupts, run_agent_input).
	HubProtocol int
	// HubProjectDir is the project_dir a protocol-2 extension puts on its
	// project-scoped frames (new_session, tool_request, …). Required with
	// a Panel on protocol 2, as the real extension sends none without it.
	HubProjectDir string
	// Panel, when set, makes the extension act as a user at its side panel
	// once connected, so that end-to-end tests exercise the conversation
	// frames: see [Panel].
	Panel *Panel

	// DisableNative turns the native messaging side off.
	DisableNative bool
	// NativeHost is the native messaging host to connect to. "" means
	// NativeHostName.
	NativeHost string
	// NativeReconnectDelay is how long the extension waits before
	// reconnecting after the native port drops or fails to start. Zero
	// means 5 s, as the reference extension waits.
	NativeReconnectDelay time.Duration

	// WakeInterval is the period of the alarm that starts the service
	// worker again after Chrome stopped it, so that it reconnects. Zero
	// means 30 s, the shortest Chrome allows a packed extension; an
	// unpacked one, as loaded by the harness, may ask for less.
	WakeInterval time.Duration

	// Log makes the service worker log its connection events with
	// console.log; Chromium prints them to its standard error when started
	// with --enable-logging=stderr. Tokens and payloads are never logged.
	Log bool
}

// Panel scripts the side panel of the reference extension. After each hello
// ack it starts a new session (protocol 2), sends Message as the user's
// panel message (user_message, or run_agent_input on protocol 2) and, when
// ToolName is set, one tool_request. It folds the chat events it receives
// into a transcript, answers approvals as Config.Approvals says, fetches
// each artifact an assistant text links to (a markdown image of
// …/.infer/artifacts/<rel>, or …/.infer/projects/<slug>/artifacts/<rel> on
// protocol 2, rewritten onto the hub's /artifacts/ route as the real panel
// does), and after every run's end and its tool request's result sends a
// tool_request of ReportTool whose tool_args is a [PanelReport].
type Panel struct {
	Message    string
	ToolName   string
	ToolArgs   string
	ReportTool string // default "PanelReport"
}

// PanelReport is what a scripted [Panel] reports, as the tool_args of its
// ReportTool request.
type PanelReport struct {
	// Messages are the transcript: text messages by role, in order.
	Messages []PanelMessage `json:"messages"`
	// Events are the AG-UI event types received, in order.
	Events []string `json:"events"`
	// Thread is the threadId of the last RUN_STARTED.
	Thread string `json:"thread"`
	// Interrupts are the ids of the interrupts answered, in order.
	Interrupts []string `json:"interrupts"`
	// Approvals are the request ids of the approval requests answered
	// (approval_request frames, CUSTOM approval_request events).
	Approvals []string `json:"approvals"`
	// ToolResult is the tool_result of the panel's tool request, once it
	// came.
	ToolResult *PanelToolResult `json:"toolResult"`
	// Artifacts are the artifacts fetched: URL, HTTP status and body.
	Artifacts []PanelArtifact `json:"artifacts"`
}

// PanelMessage is one text message of a [PanelReport].
type PanelMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// PanelToolResult is a tool_result as a [PanelReport] carries it.
type PanelToolResult struct {
	Success bool   `json:"success"`
	Output  string `json:"output"`
	Error   string `json:"error"`
}

// PanelArtifact is one fetched artifact of a [PanelReport].
type PanelArtifact struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// fileConfig is config.json as the service worker reads it.
type fileConfig struct {
	Native    nativeConfig `json:"native"`
	Hub       *hubConfig   `json:"hub"`
	Approvals string       `json:"approvals"`
	WakeMs    int64        `json:"wakeMs"`
	Log       bool         `json:"log"`
}

type nativeConfig struct {
	Enabled     bool   `json:"enabled"`
	Host        string `json:"host"`
	ReconnectMs int64  `json:"reconnectMs"`
}

type hubConfig struct {
	URL          string       `json:"url"`
	Token        string       `json:"token"`
	BackoffMinMs int64        `json:"backoffMinMs"`
	BackoffMaxMs int64        `json:"backoffMaxMs"`
	PingMs       int64        `json:"pingMs"`
	Protocol     int          `json:"protocol,omitempty"`
	ProjectDir   string       `json:"projectDir,omitempty"`
	Panel        *panelConfig `json:"panel,omitempty"`
}

type panelConfig struct {
	Message    string `json:"message"`
	ToolName   string `json:"toolName"`
	ToolArgs   string `json:"toolArgs"`
	ReportTool string `json:"reportTool"`
}

// HubURL returns the URL the extension dials for a hub on port.
func HubURL(port int) string {
	return "ws://127.0.0.1:" + strconv.Itoa(port) + "/ws"
}

// ErrInvalidConfig is matched by the errors Write and WriteConfig return
// for a Config they refuse.
var ErrInvalidConfig = errors.New("extension: invalid config")

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// millis converts a positive duration to whole milliseconds, at least 1.
func millis(field string, d time.Duration) (int64, error) {
	if d < 0 {
		return 0, fmt.Errorf("%w: %s is negative", ErrInvalidConfig, field)
	}
	return max(d.Milliseconds(), 1), nil
}

func (c *Config) file() (*fileConfig, error) {
	fc := &fileConfig{Approvals: c.Approvals.String(), Log: c.Log}
	switch c.Approvals {
	case ApprovalIgnore, ApprovalApprove, ApprovalReject:
	default:
		return nil, fmt.Errorf("%w: unknown approval policy %d", ErrInvalidConfig, int(c.Approvals))
	}
	host := c.NativeHost
	if host == "" {
		host = NativeHostName
	}
	reconnect, err := millis("NativeReconnectDelay", orDefault(c.NativeReconnectDelay, 5*time.Second))
	if err != nil {
		return nil, err
	}
	fc.Native = nativeConfig{Enabled: !c.DisableNative, Host: host, ReconnectMs: reconnect}
	if fc.WakeMs, err = millis("WakeInterval", orDefault(c.WakeInterval, 30*time.Second)); err != nil {
		return nil, err
	}
	if !hostName.MatchString(host) {
		return nil, fmt.Errorf("%w: invalid native host name %q", ErrInvalidConfig, host)
	}
	if c.HubPort == 0 {
		return fc, nil
	}
	if c.HubPort < 1 || c.HubPort > 65535 {
		return nil, fmt.Errorf("%w: HubPort %d is not a TCP port", ErrInvalidConfig, c.HubPort)
	}
	if c.HubToken == "" {
		return nil, fmt.Errorf("%w: HubToken is required with HubPort", ErrInvalidConfig)
	}
	h := &hubConfig{URL: HubURL(c.HubPort), Token: c.HubToken}
	if h.BackoffMinMs, err = millis("HubBackoffMin", orDefault(c.HubBackoffMin, time.Second)); err != nil {
		return nil, err
	}
	if h.BackoffMaxMs, err = millis("HubBackoffMax", orDefault(c.HubBackoffMax, 30*time.Second)); err != nil {
		return nil, err
	}
	if h.BackoffMaxMs < h.BackoffMinMs {
		return nil, fmt.Errorf("%w: HubBackoffMax is shorter than HubBackoffMin", ErrInvalidConfig)
	}
	if h.PingMs, err = millis("HubPingInterval", orDefault(c.HubPingInterval, 20*time.Second)); err != nil {
		return nil, err
	}
	if c.HubProtocol < 0 {
		return nil, fmt.Errorf("%w: HubProtocol is negative", ErrInvalidConfig)
	}
	h.Protocol, h.ProjectDir = c.HubProtocol, c.HubProjectDir
	if p := c.Panel; p != nil {
		if c.HubProtocol >= 2 && c.HubProjectDir == "" {
			return nil, fmt.Errorf("%w: a protocol-2 Panel needs HubProjectDir", ErrInvalidConfig)
		}
		h.Panel = &panelConfig{Message: p.Message, ToolName: p.ToolName, ToolArgs: p.ToolArgs, ReportTool: p.ReportTool}
		if h.Panel.ReportTool == "" {
			h.Panel.ReportTool = "PanelReport"
		}
	}
	fc.Hub = h
	return fc, nil
}

// hostName is Chrome's rule for native host names.
var hostName = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// Write writes the extension into dir, creating dir when needed and
// replacing the extension's files there, with cfg in its configuration
// file. The folder can then be loaded with
// Chromium's --load-extension=dir.
func Write(dir string, cfg Config) error {
	fc, err := cfg.file()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("extension: %w", err)
	}
	err = fs.WalkDir(Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, filepath.FromSlash(path)), 0o755)
		}
		data, err := fs.ReadFile(Files(), path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, filepath.FromSlash(path)), data, 0o644)
	})
	if err != nil {
		return fmt.Errorf("extension: writing files: %w", err)
	}
	return writeConfig(dir, fc)
}

// WriteConfig replaces the configuration file of an extension written by
// Write. The running extension reads it again before each connection
// attempt, so the change applies at its next reconnect.
func WriteConfig(dir string, cfg Config) error {
	fc, err := cfg.file()
	if err != nil {
		return err
	}
	return writeConfig(dir, fc)
}

func writeConfig(dir string, fc *fileConfig) error {
	data, err := json.MarshalIndent(fc, "", "  ")
	if err != nil {
		return fmt.Errorf("extension: %w", err)
	}
	// Written to a temporary file and renamed, so the service worker
	// never reads half a file.
	tmp, err := os.CreateTemp(dir, "."+ConfigFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("extension: writing config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("extension: writing config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("extension: writing config: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ConfigFile)); err != nil {
		return fmt.Errorf("extension: writing config: %w", err)
	}
	return nil
}
