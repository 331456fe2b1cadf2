package webagents

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReferencesCannotAmplifyAResult: an input of 128,000 characters holds
// thousands of {"$ref":"big"}. Each was resolved (and the result decoded
// again) before the resolved input's size was checked, so one batch naming
// a 100 KB result 8,000 times made the server build gigabytes before
// refusing it. Resolution stops as soon as the resolved input is over the
// limit.
func TestReferencesCannotAmplifyAResult(t *testing.T) {
	m := manifestWith(t, "", `{"big":{"effect":"read"},"sink":{"effect":"read"}}`)
	big := strings.Repeat("x", 100_000)
	h, err := NewHandler(m, map[string]ActionHandler{
		"big":  ActionFunc(func(context.Context, *ActionRequest) (any, error) { return big, nil }),
		"sink": ActionFunc(func(context.Context, *ActionRequest) (any, error) { return "ok", nil }),
	}, &HandlerOptions{Origin: testOrigin})
	require.NoError(t, err)
	defer h.Close()
	refs := strings.TrimSuffix(strings.Repeat(`{"$ref":"big"},`, 8000), ",")
	body := `{"version":"0.1","operations":[{"id":"big","action":"big"},{"id":"s","action":"sink","input":{"a":[` + refs + `]}}]}`
	require.Less(t, len(body), DefaultMaxBodyChars)
	var code int
	alloc := allocsOf(func() { code = post(h, body, nil).Code })
	assert.Equal(t, 413, code)
	assert.Less(t, alloc, uint64(64<<20), "resolution stops at the limit")

	// References to small parts of a large result are resolved.
	m = manifestWith(t, "", `{"big":{"effect":"read"},"sink":{"effect":"read"}}`)
	h2, err := NewHandler(m, map[string]ActionHandler{
		"big": ActionFunc(func(context.Context, *ActionRequest) (any, error) {
			return map[string]any{"id": "p1", "blob": big}, nil
		}),
		"sink": ActionFunc(func(_ context.Context, r *ActionRequest) (any, error) { return r.Input, nil }),
	}, &HandlerOptions{Origin: testOrigin})
	require.NoError(t, err)
	defer h2.Close()
	rec := post(h2, `{"version":"0.1","operations":[{"id":"big","action":"big"},{"id":"s","action":"sink","input":{"a":[{"$ref":"big.id"},{"$ref":"big.id"}]}}]}`, nil)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"s":{"a":["p1","p1"]}`)
}
