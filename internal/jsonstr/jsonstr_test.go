package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marshal is encoding/json's string encoding without HTML escaping.
func marshal(t testing.TB, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(s))
	return strings.TrimSuffix(b.String(), "\n")
}

var cases = []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "<>&", "é漢字🙂", "\u2028\u2029", "bad\xff\xfe utf8\xc3", "tail\xe2\x80"}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range cases {
		assert.Equal(t, marshal(t, s), string(Append(nil, s, true)), "%q", s)
	}
}

func TestAppendWithoutLineTerminators(t *testing.T) {
	for _, s := range cases {
		want := strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(marshal(t, s))
		assert.Equal(t, want, string(Append(nil, s, false)), "%q", s)
	}
	assert.Equal(t, `x"a`+"\u2028"+`"`, string(Append([]byte("x"), "a\u2028", false)), "appends to dst")
}

func FuzzAppend(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s, true)
		if want := marshal(t, s); string(got) != want {
			t.Fatalf("Append(%q) = %s, encoding/json %s", s, got, want)
		}
		var back string
		require.NoError(t, json.Unmarshal(Append(nil, s, false), &back))
		if want := string([]rune(s)); back != want { // each invalid byte → U+FFFD
			t.Fatalf("round trip of %q: %q", s, back)
		}
	})
}
