package extbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Limits of [InputHistory], documented on it. They are fixed: the
// number of entries is also the most a history frame carries, and the
// other two bound what one entry and one file cost.
const (
	// maxHistoryEntryBytes is the largest entry recorded; longer ones are
	// not recorded.
	maxHistoryEntryBytes = 64 << 10
	// maxHistoryFileBytes is how much of a history file is read: only its
	// last maxHistoryFileBytes bytes are loaded.
	maxHistoryFileBytes = 8 << 20
)

// InputHistory is the shell-style input history the panel's arrow-up recall
// shares with the CLI: entries are trimmed, empty ones and consecutive
// duplicates are skipped, multi-line entries are kept whole, and only the
// last 1000 are kept; an entry longer than 64 KiB is not recorded. It may
// persist to a file (JSON Lines, one JSON string per line, mode 0600), of
// which only the last 8 MiB are read. Its methods are safe for concurrent
// use.
type InputHistory struct {
	mu        sync.Mutex
	entries   []string
	path      string // "" for memory only
	fileLines int    // lines in the file, to know when to compact it
}

// NewInputHistory returns an empty history kept in memory only.
func NewInputHistory() *InputHistory { return &InputHistory{} }

// OpenInputHistory returns a history persisted at path, loading the entries
// already there (a missing file is an empty history; lines that are not
// JSON strings are skipped). The file is created on the first Add.
func OpenInputHistory(path string) (*InputHistory, error) {
	h := &InputHistory{path: path}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("extbridge: input history: %w", err)
	}
	defer f.Close()
	if err := h.load(f); err != nil {
		return nil, fmt.Errorf("extbridge: input history %s: %w", filepath.Base(path), err)
	}
	return h, nil
}

// load reads the tail of a history file.
func (h *InputHistory) load(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	var r io.Reader = f
	partial := false
	if info.Size() > maxHistoryFileBytes {
		if _, err := f.Seek(-maxHistoryFileBytes, io.SeekEnd); err != nil {
			return err
		}
		partial = true
	}
	data, err := io.ReadAll(io.LimitReader(r, maxHistoryFileBytes))
	if err != nil {
		return err
	}
	if partial {
		// The first line is cut; skip it.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		} else {
			data = nil
		}
	}
	h.entries, h.fileLines = parseHistory(data)
	return nil
}

// parseHistory decodes JSON Lines history data with the Add rules applied.
func parseHistory(data []byte) (entries []string, lines int) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		lines++
		var s string
		// An entry's JSON is at most 6 bytes per byte of text (\u00XX).
		if len(line) > 6*maxHistoryEntryBytes+2 || json.Unmarshal(line, &s) != nil {
			continue
		}
		if e, ok := historyEntry(s, entries); ok {
			entries = appendCapped(entries, e)
		}
	}
	return entries, lines
}

// historyEntry applies the rules to a new entry given the current entries.
func historyEntry(s string, entries []string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxHistoryEntryBytes {
		return "", false
	}
	if n := len(entries); n > 0 && entries[n-1] == s {
		return "", false
	}
	return s, true
}

func appendCapped(entries []string, e string) []string {
	entries = append(entries, e)
	if len(entries) > maxHistoryEntries {
		entries = append(entries[:0:0], entries[len(entries)-maxHistoryEntries:]...)
	}
	return entries
}

// Add records entry and reports whether it was recorded (false for an
// empty, oversized or consecutive duplicate entry). With a file, the entry
// is appended to it; the file is rewritten with the kept entries when it
// has grown to twice [maxHistoryEntries] lines.
func (h *InputHistory) Add(entry string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := historyEntry(entry, h.entries)
	if !ok {
		return false, nil
	}
	h.entries = appendCapped(h.entries, e)
	if h.path == "" {
		return true, nil
	}
	if h.fileLines+1 >= 2*maxHistoryEntries {
		return true, h.rewrite()
	}
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return true, fmt.Errorf("extbridge: input history: %w", err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, fmt.Errorf("extbridge: input history: %w", err)
	}
	h.fileLines++
	return true, nil
}

// rewrite replaces the file with the kept entries, atomically.
func (h *InputHistory) rewrite() error {
	var buf bytes.Buffer
	for _, e := range h.entries {
		line, _ := json.Marshal(e)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".history-*")
	if err != nil {
		return fmt.Errorf("extbridge: input history: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("extbridge: input history: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("extbridge: input history: %w", err)
	}
	if err := os.Rename(tmp.Name(), h.path); err != nil {
		return fmt.Errorf("extbridge: input history: %w", err)
	}
	h.fileLines = len(h.entries)
	return nil
}

// Entries returns the kept entries, oldest first (never nil).
func (h *InputHistory) Entries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(make([]string, 0, len(h.entries)), h.entries...)
}
