package extbridge

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInputHistoryRules(t *testing.T) {
	h := NewInputHistory()
	add := func(s string, want bool) {
		t.Helper()
		ok, err := h.Add(s)
		require.NoError(t, err)
		assert.Equal(t, want, ok, "%q", s)
	}
	add("  fix the tests \n", true)
	add("fix the tests", false) // consecutive duplicate after trim
	add("   ", false)
	add("", false)
	add("line one\nline two", true)
	add("fix the tests", true) // not consecutive
	add(strings.Repeat("x", maxHistoryEntryBytes+1), false)
	assert.Equal(t, []string{"fix the tests", "line one\nline two", "fix the tests"}, h.Entries())

	for i := range 2000 {
		add("entry "+strconv.Itoa(i), true)
	}
	got := h.Entries()
	assert.Len(t, got, maxHistoryEntries)
	assert.Equal(t, "entry 1000", got[0])
	assert.Equal(t, "entry 1999", got[999])
}

func TestInputHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := OpenInputHistory(path)
	require.NoError(t, err)
	assert.Empty(t, h.Entries())
	for _, s := range []string{"one", "two\nlines", "two\nlines", "three \"quoted\""} {
		_, err := h.Add(s)
		require.NoError(t, err)
	}
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, err := OpenInputHistory(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two\nlines", "three \"quoted\""}, again.Entries())

	// Growth past twice the cap compacts the file.
	for i := range 2*maxHistoryEntries + 5 {
		_, err := again.Add("e" + strconv.Itoa(i))
		require.NoError(t, err)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Count(string(data), "\n")
	assert.LessOrEqual(t, lines, 2*maxHistoryEntries)
	third, err := OpenInputHistory(path)
	require.NoError(t, err)
	assert.Equal(t, again.Entries(), third.Entries())
}

func TestInputHistoryHostileFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	content := "\"ok\"\nnot json\n{\"an\":\"object\"}\n42\n\"  \"\n\"ok\"\n\"" + strings.Repeat("y", 3*maxHistoryEntryBytes) + "\"\n\"last\"\n"
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	h, err := OpenInputHistory(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"ok", "last"}, h.Entries())

	// A file larger than the read cap: only its tail is loaded.
	big := strings.Repeat("\""+strings.Repeat("z", 1000)+"\"\n", maxHistoryFileBytes/1000+10) + "\"tail\"\n"
	require.NoError(t, os.WriteFile(path, []byte(big), 0o600))
	h, err = OpenInputHistory(path)
	require.NoError(t, err)
	entries := h.Entries()
	require.NotEmpty(t, entries)
	assert.Equal(t, "tail", entries[len(entries)-1])
}
