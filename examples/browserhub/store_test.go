package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge"
)

func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conversations")
	s, err := OpenStore(dir)
	require.NoError(t, err)
	defer s.Close()

	list, err := s.List()
	require.NoError(t, err)
	assert.Empty(t, list)

	a, b := NewID(), NewID()
	assert.True(t, ValidID(a))
	require.NoError(t, s.Append(a, Message{Role: "user", Content: "first line of a long question\nsecond"}))
	require.NoError(t, s.Append(a, Message{Role: "assistant", Content: "answer"}))
	require.NoError(t, s.Append(b, Message{Role: "assistant", Content: "no user yet"}))

	list, err = s.List()
	require.NoError(t, err)
	require.Len(t, list, 2)
	byID := map[string]extbridge.Conversation{}
	for _, c := range list {
		byID[c.ID] = c
	}
	assert.Equal(t, "first line of a long question", byID[a].Title)
	assert.Equal(t, 2, byID[a].MessageCount)
	assert.Equal(t, "", byID[b].Title)

	c, err := s.Load(a)
	require.NoError(t, err)
	assert.Len(t, c.Messages, 2)

	for _, bad := range []string{"", "../x", "/etc/passwd", "ABCDEFAB-0000-4000-8000-000000000000", a + "x"} {
		_, err := s.Load(bad)
		assert.True(t, errors.Is(err, extbridge.ErrUnknownConversation), bad)
		assert.Error(t, s.Append(bad, Message{Role: "user"}))
	}

	// Hostile or foreign files in the folder are skipped.
	require.NoError(t, os.WriteFile(filepath.Join(dir, NewID()+".json"), []byte("{not json"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600))
	other := NewID()
	require.NoError(t, os.WriteFile(filepath.Join(dir, other+".json"), []byte(`{"id":"`+a+`"}`), 0o600))
	list, err = s.List()
	require.NoError(t, err)
	assert.Len(t, list, 2)
}
