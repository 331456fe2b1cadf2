package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/internal/extension"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// framesStep shows a frame's bytes, moves frames both ways through an
// in-memory host/browser pair, and shows the 1 MiB limit refusing a frame.
func framesStep(ctx context.Context, r *runner) (string, error) {
	hello := []byte(`{"kind":"bridge:hello"}`)
	var wire bytes.Buffer
	if err := nativemsg.NewWriter(&wire, nil).WriteMessage(hello); err != nil {
		return "", err
	}
	r.logf("a frame is a uint32 little-endian length, then JSON:")
	r.logf("  % x  = %d", wire.Bytes()[:4], len(hello))
	r.logf("  % x ...  = %s", wire.Bytes()[4:12], hello)

	host, browser := nativemsg.Pipe()
	defer host.Close()
	defer browser.Close()
	errc := make(chan error, 1)
	go func() { errc <- browser.WriteMessage(hello) }()
	body, err := host.ReadMessage(nil)
	if err != nil {
		return "", err
	}
	if err := <-errc; err != nil {
		return "", err
	}
	r.logf("browser → host through an in-memory pipe: %s", body)

	request := map[string]any{"kind": "bridge:request", "id": "h1", "type": "browser.snapshot", "payload": map[string]any{}}
	go func() { errc <- host.Encode(request) }()
	raw, err := browser.ReadMessage(nil)
	if err != nil {
		return "", err
	}
	if err := <-errc; err != nil {
		return "", err
	}
	r.logf("host → browser: %s", raw)

	// Chrome closes the port on a host frame over 1 MiB; the Writer refuses
	// it before writing anything, so a host can answer with an error.
	big := `"` + strings.Repeat("x", nativemsg.DefaultWriteLimit-1) + `"`
	err = host.WriteMessage([]byte(big))
	var fse *nativemsg.FrameSizeError
	if !errors.As(err, &fse) {
		return "", fmt.Errorf("a %d-byte frame was not refused: %v", len(big), err)
	}
	r.logf("refused before writing: %v", err)
	return fmt.Sprintf("frames both ways; a %d-byte frame refused", fse.Size), nil
}

// manifestStep generates the host manifest Chromium needs for the
// reference extension, into a throwaway profile folder.
func manifestStep(ctx context.Context, r *runner) (string, error) {
	profile := filepath.Join(r.dir, "chromium-profile")
	loc, err := nativemsg.ManifestLocation(nativemsg.Chromium, nativemsg.UserScope, "com.weboperator.bridge",
		&nativemsg.LocationOptions{UserDataDir: profile})
	if err != nil {
		return "", err
	}
	// `weboperator-host install` writes this manifest pointing at its own
	// absolute path; the Chromium step below builds the real host and
	// installs its manifest into that browser's profile the same way.
	m := &nativemsg.HostManifest{
		Name:           "com.weboperator.bridge",
		Description:    "WebOperator bridge (agentbridge demo)",
		Path:           filepath.Join(r.dir, "bin", "weboperator-host"),
		Type:           "stdio",
		AllowedOrigins: []string{nativemsg.ExtensionOrigin(extension.ID)},
	}
	if err := nativemsg.Install(m, loc, nil); err != nil {
		return "", err
	}
	data, err := os.ReadFile(loc.ManifestPath)
	if err != nil {
		return "", err
	}
	r.logf("wrote %s:", loc.ManifestPath)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		r.logf("  %s", line)
	}
	return "manifest for extension " + extension.ID + " written for Chromium", nil
}
