package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/browsertest"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args []string
		want Options
	}{
		{nil, Options{}},
		{[]string{"--headful"}, Options{Headful: true}},
		{[]string{"--chromium", "/opt/chromium/chrome"}, Options{Chromium: "/opt/chromium/chrome"}},
		{[]string{"--chromium=/usr/bin/chromium"}, Options{Chromium: "/usr/bin/chromium"}},
		{[]string{"--screenshots", "shots"}, Options{ScreenshotDir: "shots"}},
		{[]string{"--no-browser"}, Options{NoBrowser: true}},
		{[]string{"--keep"}, Options{KeepTemp: true}},
		{[]string{"-keep", "-no-browser"}, Options{KeepTemp: true, NoBrowser: true}},
		{
			[]string{"--headful", "--chromium", "/c", "--screenshots", "/s", "--no-browser", "--keep"},
			Options{Headful: true, Chromium: "/c", ScreenshotDir: "/s", NoBrowser: true, KeepTemp: true},
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			got, err := parseFlags(tt.args, &out)
			require.NoError(t, err, out.String())
			assert.Equal(t, tt.want, got)
			assert.Empty(t, out.String())
		})
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--chromium"},        // a path is needed
		{"--keep", "extra"},   // no arguments
		{"--headful=perhaps"}, // not a boolean
	} {
		var out bytes.Buffer
		_, err := parseFlags(args, &out)
		assert.Error(t, err, "%q", args)
		assert.Contains(t, out.String(), "usage: go run ./examples/demo", "%q", args)
	}
	var out bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &out)
	assert.ErrorIs(t, err, flag.ErrHelp)
	for _, name := range []string{"-headful", "-chromium PATH", "-screenshots DIR", "-no-browser", "-keep"} {
		assert.Contains(t, out.String(), name)
	}
}

// flagUse matches a flag named in prose, with its argument when it has
// one: "--chromium /path/to/chromium", "--no-browser".
var flagUse = regexp.MustCompile(`--([a-z][a-z-]*)(?:[ =](/\S*|[A-Z]+\b))?`)

// TestMessagesNameWorkingFlags: every flag the tour tells the user to pass,
// as it spells it, is accepted.
func TestMessagesNameWorkingFlags(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no Chromium: the tour says how to get it
	t.Setenv(browsertest.ChromiumEnv, "")
	var out bytes.Buffer
	require.NoError(t, Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out}), out.String())
	require.NoError(t, Run(t.Context(), Options{PBKDF2Iterations: testPBKDF2Iterations, Out: &out, NoBrowser: true}), out.String())
	uses := flagUse.FindAllStringSubmatch(out.String(), -1)
	require.NotEmpty(t, uses, "the tour's skip messages name no flag:\n%s", out.String())
	seen := map[string]bool{}
	for _, m := range uses {
		seen[m[1]] = true
		args := strings.Fields(strings.ReplaceAll(strings.TrimSuffix(m[0], ","), "=", " "))
		_, err := parseFlags(args, io.Discard)
		assert.NoError(t, err, "the tour says %q", m[0])
	}
	assert.True(t, seen["chromium"], "the missing-Chromium message names --chromium")
	assert.True(t, seen["no-browser"], "the --no-browser skip names the flag")
}

// TestREADMEFlags: the README's account of the demo names every flag, and
// only flags that exist.
func TestREADMEFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## The demo\n")
	require.True(t, ok, "README has no section The demo")
	section, _, _ = strings.Cut(section, "\n## ")
	_, flags, ok := strings.Cut(section, "Flags:")
	require.True(t, ok, "the README's demo section lists no flags")
	flags, _, _ = strings.Cut(flags, "\n\n")

	var opts Options
	fs := newFlagSet(&opts, io.Discard)
	named := map[string]bool{}
	for _, m := range flagUse.FindAllStringSubmatch(flags, -1) {
		named[m[1]] = true
		f := fs.Lookup(m[1])
		if !assert.NotNil(t, f, "README names --%s, which the demo does not have", m[1]) {
			continue
		}
		// "--chromium PATH": the README's argument name is the usage's.
		wantArg, _ := flag.UnquoteUsage(f)
		assert.Equal(t, wantArg, m[2], "the argument of --%s", m[1])
	}
	fs.VisitAll(func(f *flag.Flag) {
		assert.True(t, named[f.Name], "README does not name --%s", f.Name)
	})
}
