package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// errFileTooLarge is returned by readFile for a file over its limit.
var errFileTooLarge = errors.New("file too large")

// readFile reads at most limit bytes of a file.
func readFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", name, limit, errFileTooLarge)
	}
	return data, nil
}

// inertWriter replaces C0 control characters other than tab and newline,
// DEL, C1 control characters and invalid UTF-8 with U+FFFD, so that text
// from a site cannot drive the terminal (escape sequences, hyperlinks,
// clearing the screen). Each Write is expected to hold whole UTF-8
// sequences, as fmt and json.Encoder produce.
type inertWriter struct{ w io.Writer }

func (iw inertWriter) Write(p []byte) (int, error) {
	clean := true
	for _, r := range string(p) {
		if isControl(r) || r == utf8.RuneError { // invalid bytes too: 0x9b is CSI to 8-bit terminals
			clean = false
			break
		}
	}
	if clean {
		return iw.w.Write(p)
	}
	out := strings.Map(func(r rune) rune {
		if isControl(r) {
			return utf8.RuneError
		}
		return r
	}, string(p))
	if _, err := io.WriteString(iw.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}
