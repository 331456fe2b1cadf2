package safeprint

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileText is what issue 21 saw reach the terminal from page titles
// and text: a clipboard write (OSC 52), a screen clear, a forged line, an
// OSC 8 link, a bell, an 8-bit CSI and a bidirectional override.
const hostileText = "Shop\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\r\nagentctl: approved\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\\u009b31m\u202egnp.exe\x7f\xff\xc2"

// raw reports the first byte or character a terminal would act on.
func raw(t *testing.T, s string, line bool) {
	t.Helper()
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			t.Errorf("invalid UTF-8 at %d in %q", i, s)
		}
		if hidden(r) && (line || (r != '\n' && r != '\t')) {
			t.Errorf("raw %U at %d in %q", r, i, s)
		}
	}
}

func TestLine(t *testing.T) {
	got := Line(hostileText)
	raw(t, got, true)
	assert.Equal(t, `Shop\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\r\nagentctl: approved\u001b]8;;https://evil.example\u001b\click\u001b]8;;\u001b\\u009b31m\u202egnp.exe\u007f\xff\xc2`, got)
	assert.Equal(t, `a\tb`, Line("a\tb"), "a single line holds no tab either")
	s := "Les Misérables — 東京 🙂"
	assert.Equal(t, s, Line(s), "printable text is kept")
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = Line(s) }), "and not copied")
}

func TestWriterKeepsNewlinesAndTabs(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	n, err := w.Write([]byte(hostileText + "\n\tend"))
	require.NoError(t, err)
	assert.Equal(t, len(hostileText)+5, n)
	require.NoError(t, w.Flush())
	raw(t, b.String(), false)
	assert.Equal(t, `Shop\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\r`+"\n"+`agentctl: approved\u001b]8;;https://evil.example\u001b\click\u001b]8;;\u001b\\u009b31m\u202egnp.exe\u007f\xff\xc2`+"\n\tend", b.String())
}

// TestWriterSplitWrites writes text one byte at a time, and at every
// split: a character cut between writes is printed whole, and a C1
// control so cut is still escaped (the old inertWriter printed an
// "é" split between two writes as two U+FFFD).
func TestWriterSplitWrites(t *testing.T) {
	for _, s := range []string{"é東🙂\u0085x", hostileText, "\xe2\x82", "a\xf0\x9f\x99"} {
		var whole bytes.Buffer
		w := NewWriter(&whole)
		_, _ = w.Write([]byte(s))
		require.NoError(t, w.Flush())
		for cut := range len(s) + 1 {
			var b bytes.Buffer
			w := NewWriter(&b)
			_, _ = w.Write([]byte(s[:cut]))
			_, _ = w.Write([]byte(s[cut:]))
			require.NoError(t, w.Flush())
			assert.Equal(t, whole.String(), b.String(), "%q split at %d", s, cut)
		}
		var b bytes.Buffer
		w = NewWriter(&b)
		for i := range len(s) {
			_, _ = w.Write([]byte{s[i]})
		}
		require.NoError(t, w.Flush())
		assert.Equal(t, whole.String(), b.String(), "%q a byte at a time", s)
	}
	var b bytes.Buffer
	_, _ = NewWriter(&b).Write([]byte("\xc2"))
	_, _ = NewWriter(&b).Write([]byte("\x85"))
	raw(t, b.String(), false)
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte(hostileText), 3)
	f.Add([]byte("é\u0085"), 1)
	f.Fuzz(func(t *testing.T, p []byte, cut int) {
		var b bytes.Buffer
		w := NewWriter(&b)
		cut = min(max(cut, 0), len(p))
		_, _ = w.Write(p[:cut])
		_, _ = w.Write(p[cut:])
		require.NoError(t, w.Flush())
		out := b.String()
		raw(t, out, false)
		if clean(p) {
			assert.Equal(t, string(p), out, "clean text is kept")
		}
		line := Line(string(p))
		raw(t, line, true)
		assert.NotContains(t, line, "\n")
	})
}
