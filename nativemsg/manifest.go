package nativemsg

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// HostManifest is a native messaging host manifest: the JSON file a
// browser reads to find a host and to learn which extensions may start it.
// There is no args field: Path must be the executable itself.
type HostManifest struct {
	// Name is the host's name, as extensions pass it to connectNative:
	// lowercase letters, digits, underscores and dots, not starting or
	// ending with a dot and with no two dots in a row.
	Name string `json:"name"`
	// Description is shown to nobody but must be present.
	Description string `json:"description"`
	// Path is the absolute path of the host executable.
	Path string `json:"path"`
	// Type is always "stdio".
	Type string `json:"type"`
	// AllowedOrigins lists the Chromium extensions allowed to start the
	// host, each exactly "chrome-extension://<id>/". No wildcards.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// AllowedExtensions lists the Firefox add-on ids allowed to start the
	// host. No wildcards.
	AllowedExtensions []string `json:"allowed_extensions,omitempty"`
}

// ManifestError is one problem found by Validate.
type ManifestError struct {
	Field   string // JSON field name, with an index for list entries
	Message string
}

func (e *ManifestError) Error() string {
	return "nativemsg: host manifest: " + e.Field + ": " + e.Message
}

var hostName = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// Validate checks the manifest as browsers do, and as strictly as the most
// demanding of them. It reports every problem, joined with errors.Join;
// each is a *ManifestError.
func (m *HostManifest) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ManifestError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !hostName.MatchString(m.Name) {
		bad("name", "must be lowercase letters, digits, underscores and single dots, not starting or ending with a dot")
	}
	if strings.TrimSpace(m.Description) == "" {
		bad("description", "is required")
	}
	switch {
	case m.Path == "":
		bad("path", "is required")
	case !filepath.IsAbs(m.Path):
		bad("path", "must be an absolute path to the host executable")
	}
	if m.Type != "stdio" {
		bad("type", `must be "stdio"`)
	}
	if len(m.AllowedOrigins) == 0 && len(m.AllowedExtensions) == 0 {
		bad("allowed_origins", "at least one extension must be allowed (allowed_origins, or allowed_extensions for Firefox)")
	}
	for i, o := range m.AllowedOrigins {
		if _, err := originExtensionID(o); err != nil {
			bad(fmt.Sprintf("allowed_origins[%d]", i), "%v; wildcards are not allowed", err)
		}
	}
	for i, id := range m.AllowedExtensions {
		if !ValidAddonID(id) {
			bad(fmt.Sprintf("allowed_extensions[%d]", i), `must be a Firefox add-on id ("name@domain" or "{UUID}"); wildcards are not allowed`)
		}
	}
	return errors.Join(errs...)
}

// MarshalIndent returns the manifest as the indented JSON a browser reads.
func (m *HostManifest) MarshalIndent() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes and validates a host manifest. Duplicate keys and
// keys differing from the field names only in case are refused, since a
// browser would read such a file differently.
func ParseManifest(data []byte) (*HostManifest, error) {
	var m HostManifest
	if err := strictjson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("nativemsg: host manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// ExtensionIDFromKey returns the id Chromium gives an extension whose
// manifest has this "key": the base64 of its DER-encoded public key. The id
// is the first 128 bits of the key's SHA-256, in hex, with the digits 0-f
// written as the letters a-p.
func ExtensionIDFromKey(key string) (string, error) {
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(key), ""))
	if err != nil {
		return "", fmt.Errorf("nativemsg: extension key is not base64: %w", err)
	}
	if len(der) == 0 {
		return "", errors.New("nativemsg: extension key is empty")
	}
	sum := sha256.Sum256(der)
	id := make([]byte, 32)
	for i, b := range sum[:16] {
		id[2*i] = 'a' + b>>4
		id[2*i+1] = 'a' + b&0x0f
	}
	return string(id), nil
}
