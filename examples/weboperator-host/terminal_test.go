package main

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/nativemsg"
	"github.com/stretchr/testify/assert"
)

// TestHostileTextReachesStderrQuoted: the host prints nothing of its own
// from the browser or the environment raw. Its logs go through slog's
// text handler, which quotes (strconv.Quote) any value holding a control
// character, and its errors quote what they name; this keeps it so.
func TestHostileTextReachesStderrQuoted(t *testing.T) {
	const hostile = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\r\napproved\u009b31m\u202e"
	hostileEnv := map[string]string{
		agentproto.EnvBridgeHost: "evil.example" + hostile,
		EnvAllowedOrigins:        "chrome-extension://" + hostile + "/",
	}
	for _, args := range [][]string{
		{"chrome-extension://" + hostile + "/"},
		{hostile},
		{nativemsg.ExtensionOrigin(extensionID), "--parent-window=" + hostile},
		{nativemsg.ExtensionOrigin(extensionID)},
	} {
		var stderr bytes.Buffer
		env := osEnv()
		env.Stderr, env.Stdout = &stderr, io.Discard
		env.Getenv = func(k string) string { return hostileEnv[k] }
		env.OpenLink = func() (*nativemsg.Conn, error) { return nil, errors.New("no browser here") }
		assert.NotZero(t, run(t.Context(), args, env), "args %q", args)
		if len(args) == 1 && args[0] == nativemsg.ExtensionOrigin(extensionID) {
			assert.Contains(t, stderr.String(), `evil.example\\x1b]52;`, "the refused host is logged, quoted")
		}
		for i, r := range stderr.String() {
			if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || r == utf8.RuneError {
				t.Errorf("raw %U at %d: %q", r, i, stderr.String())
				break
			}
		}
	}
}
