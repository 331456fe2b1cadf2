package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/extbridge"
)

// maxConversationFile bounds a conversation file read from disk.
const maxConversationFile = 32 << 20

// Store keeps conversations as JSON files, <id>.json, in one directory.
// Ids are validated before they touch the file system, and all access goes
// through os.Root. Its methods are safe for concurrent use.
type Store struct {
	mu   sync.Mutex
	root *os.Root
}

// Conversation is a stored conversation.
type Conversation struct {
	ID        string            `json:"id"`
	Title     string            `json:"title"`
	UpdatedAt time.Time         `json:"updated_at"`
	Messages  []json.RawMessage `json:"messages"`
}

// OpenStore opens (creating it) the conversations directory dir.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Store{root: root}, nil
}

// Close releases the directory.
func (s *Store) Close() error { return s.root.Close() }

// NewID returns a new conversation id (a random UUID).
func NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ValidID reports whether id has the form NewID makes.
func ValidID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i, r := range id {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
				return false
			}
		}
	}
	return true
}

// List returns the stored conversations (unreadable files are skipped).
func (s *Store) List() ([]extbridge.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir, err := s.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []extbridge.Conversation
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !ValidID(id) {
			continue
		}
		c, err := s.loadLocked(id)
		if err != nil {
			continue
		}
		out = append(out, extbridge.Conversation{ID: c.ID, Title: c.Title, UpdatedAt: c.UpdatedAt, MessageCount: len(c.Messages)})
	}
	return out, nil
}

// Load returns conversation id, or an error matching
// extbridge.ErrUnknownConversation.
func (s *Store) Load(id string) (*Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked(id)
}

func (s *Store) loadLocked(id string) (*Conversation, error) {
	if !ValidID(id) {
		return nil, extbridge.ErrUnknownConversation
	}
	f, err := s.root.Open(id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, extbridge.ErrUnknownConversation
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConversationFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConversationFile {
		return nil, fmt.Errorf("conversation %s: file too large", id)
	}
	var c Conversation
	if err := json.Unmarshal(data, &c); err != nil || c.ID != id {
		return nil, fmt.Errorf("conversation %s: unreadable file", id)
	}
	return &c, nil
}

// Append adds a message to conversation id, creating it when missing. The
// title is a preview of the first user message.
func (s *Store) Append(id string, msg Message) error {
	if !ValidID(id) {
		return errors.New("invalid conversation id")
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.loadLocked(id)
	if errors.Is(err, extbridge.ErrUnknownConversation) {
		c, err = &Conversation{ID: id}, nil
	}
	if err != nil {
		return err
	}
	c.Messages = append(c.Messages, raw)
	c.UpdatedAt = time.Now().UTC()
	if c.Title == "" && msg.Role == "user" && msg.Content != "" {
		c.Title = preview(msg.Content)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := "." + id + ".tmp"
	if err := s.root.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return s.root.Rename(tmp, id+".json")
}

// Message is a stored chat message.
type Message struct {
	Role        string            `json:"role"`
	Content     string            `json:"content"`
	Attachments []json.RawMessage `json:"attachments,omitempty"`
}

// preview is the first line of s, at most 60 runes.
func preview(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(line) <= 60 {
		return line
	}
	r := []rune(line)
	return string(r[:60]) + "…"
}
