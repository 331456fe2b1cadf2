package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentbridge/agentbridge/safeprint"
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

// printJSON prints v as JSON indented by two spaces, as json.Encoder with
// SetIndent("", "  ") does, within safeprint's bounds: a site's answer
// nested deeper than 64 levels is printed compactly there, and the output
// stops at 16 MiB with a line saying so.
func printJSON(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := safeprint.Indent(w, raw, nil); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// line is a single-line field from a site (a URL, a header, a message)
// with its line breaks and control characters made visible, so that it
// cannot forge a line of the CLI's own.
func line(v any) string { return safeprint.Line(fmt.Sprint(v)) }
