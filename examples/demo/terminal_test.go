package main

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPageTextReachesTheTerminalInert: what the tour prints of a page
// (a title, a URL, a step's summary) reaches the terminal with its
// control characters visible, and a title cannot start a line.
func TestPageTextReachesTheTerminalInert(t *testing.T) {
	const title = "Shop\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\r\n[9/9] approved\u009b31m\u202e"
	var out bytes.Buffer
	r := newRunner(Options{}, &out, t.TempDir())
	r.logf("navigate → %s %s", "https://evil.example/\x1b[1A", title)
	r.logf("snapshot: %q", title)
	require.NoError(t, printSummary(r.out, []result{{name: "a", status: "ok", summary: title}}))
	for i, c := range out.String() {
		if (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || c == utf8.RuneError {
			t.Errorf("raw %U at %d: %q", c, i, out.String())
			break
		}
	}
	assert.NotContains(t, out.String(), "\n[9/9] approved", "no forged step line")
	assert.Contains(t, out.String(), `    navigate → https://evil.example/\u001b[1A Shop\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\r\n[9/9] approved\u009b31m\u202e`+"\n")
}
