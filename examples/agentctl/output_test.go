package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageText is what a hostile page puts in its title and text: a
// clipboard write (OSC 52), a screen clear, a forged line, a hidden link
// (OSC 8), an 8-bit CSI and a bidirectional override.
const pageText = "Shop\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\r\nagentctl: approved\x1b]8;;https://evil.example\x1b\\x\x1b]8;;\x1b\\ \u009b31m \u202egnp.exe\x7f"

// assertInert fails when out holds a character a terminal acts on.
func assertInert(t *testing.T, out, what string) {
	t.Helper()
	for i, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || r == utf8.RuneError {
			t.Errorf("%s: raw %U at %d: %q", what, r, i, out)
			return
		}
	}
}

func TestHostileResultsReachNoTerminal(t *testing.T) {
	title, err := json.Marshal(pageText) // C0 escaped by JSON, C1 and DEL raw
	require.NoError(t, err)
	// Nested as deep as the host relays (1,000 levels, the envelope's
	// included).
	deep := append(bytes.Repeat([]byte("["), 998), bytes.Repeat([]byte("0,"), 100000)...)
	deep = append(deep[:len(deep)-1], bytes.Repeat([]byte("]"), 998)...)
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.HandlerFunc(
		func(_ context.Context, r *agentprototest.Request) (any, error) {
			r.Ext().Emit(map[string]any{"kind": "task:update", "title": pageText})
			switch r.Type {
			case "browser.fail":
				return nil, errString(pageText)
			case "browser.deep":
				return json.RawMessage(deep), nil
			case "browser.extract":
				return pageText, nil
			}
			return json.RawMessage(`{"title":` + string(title) + `}`), nil
		})}})
	defer b.Close()
	require.NoError(t, b.WaitOnline(t.Context()))

	for _, args := range [][]string{
		{`{"type":"browser.snapshot"}`},
		{`{"type":"browser.fail"}`},
		{"tool", "browser_extract", `{"instruction":"all"}`},
		{"extract", "all"},
	} {
		_, out, errOut := runCtl(t.Context(), t, b, args...)
		assertInert(t, out, "stdout of "+args[0])
		assertInert(t, errOut, "stderr of "+args[0])
		// A text result is a body whose newlines are kept; an error
		// message is one line.
		assert.NotContains(t, errOut, "\nagentctl: approved", "no forged line")
	}

	code, out, errOut := runCtl(t.Context(), t, b, `{"type":"browser.deep"}`)
	assert.Equal(t, 0, code, errOut)
	// json.Indent wrote 1,000 levels of indentation before each of the
	// 100,000 members: 200 MB.
	assert.Less(t, len(out), 2*len(deep), "levels past 64 printed compactly")
	assert.True(t, json.Valid([]byte(out)))
}
