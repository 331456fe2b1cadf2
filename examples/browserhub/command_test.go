package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line string
		want Command
		err  bool
	}{
		{"navigate https://a/", Command{Name: "navigate", URL: "https://a/"}, false},
		{"navigate", Command{}, true},
		{"navigate a b", Command{}, true},
		{"read", Command{Name: "read"}, false},
		{"read h1 > a", Command{Name: "read", Selector: "h1 > a"}, false},
		{`read "a b"`, Command{Name: "read", Selector: "a b"}, false},
		{`read "a b" c`, Command{}, true},
		{"click #buy", Command{Name: "click", Selector: "#buy"}, false},
		{"click", Command{}, true},
		{"type #q hello world", Command{Name: "type", Selector: "#q", Text: "hello world"}, false},
		{`type "input[name=q]" hi`, Command{Name: "type", Selector: "input[name=q]", Text: "hi"}, false},
		{`type "unterminated hi`, Command{}, true},
		{"type", Command{}, true},
		{"type --enter #q socks", Command{Name: "type", Selector: "#q", Text: "socks", Enter: true}, false},
		{`type --enter "input[name=q]" warm socks`, Command{Name: "type", Selector: "input[name=q]", Text: "warm socks", Enter: true}, false},
		{"type --enter", Command{}, true},
		{"type --enter ", Command{}, true},
		{"screenshot out.png", Command{Name: "screenshot", File: "out.png"}, false},
		{"screenshot", Command{}, true},
		{"tabs", Command{Name: "tabs"}, false},
		{"tabs extra", Command{}, true},
		{"say hello there", Command{Name: "say", Text: "hello there"}, false},
		{"say", Command{}, true},
		{"work 5", Command{Name: "work", Seconds: 5}, false},
		{"work", Command{}, true},
		{"work 0", Command{}, true},
		{"work -3", Command{}, true},
		{"work 3601", Command{}, true},
		{"work 1.5", Command{}, true},
		{"pending", Command{Name: "pending"}, false},
		{"pending x", Command{}, true},
		{`approve? Bash {"command":"ls -la"}`, Command{Name: "approve?", Tool: "Bash", Args: `{"command":"ls -la"}`}, false},
		{"approve? Bash", Command{Name: "approve?", Tool: "Bash"}, false},
		{"approve? Bash {", Command{}, true},
		{"approve? ", Command{}, true},
		{"approve abc", Command{Name: "approve", ID: "abc"}, false},
		{"reject abc", Command{Name: "reject", ID: "abc"}, false},
		{"reject", Command{}, true},
		{"  help  ", Command{Name: "help"}, false},
		{"launch-missiles", Command{}, true},
	}
	for _, tt := range tests {
		got, err := ParseCommand(tt.line)
		if tt.err {
			assert.Error(t, err, tt.line)
			continue
		}
		require.NoError(t, err, tt.line)
		assert.Equal(t, tt.want, got, tt.line)
	}
	_, err := ParseCommand("   ")
	assert.ErrorIs(t, err, ErrEmpty)
	_, err = ParseCommand("say " + strings.Repeat("x", maxLine))
	assert.Error(t, err)
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"navigate https://a/", `type "a b" c`, `approve? Bash {"a":1}`, "read", "screenshot f", `read "\x00"`, "type --enter #q x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		switch c.Name {
		case "navigate":
			if c.URL == "" {
				t.Fatal("navigate without url")
			}
		case "click":
			if c.Selector == "" {
				t.Fatal("click without selector")
			}
		case "type":
			if c.Selector == "" {
				t.Fatal("type without selector")
			}
		case "screenshot":
			if c.File == "" {
				t.Fatal("screenshot without file")
			}
		case "read", "tabs", "say", "approve?", "approve", "reject", "help":
		default:
			t.Fatalf("unknown command %q accepted", c.Name)
		}
	})
}
