package demo

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunPrintsEveryStepAndASummary(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(t.Context(), Options{Out: &out}))
	s := out.String()
	assert.Contains(t, s, "17 00 00 00  = 23")
	assert.Contains(t, s, `browser → host through an in-memory pipe: {"kind":"bridge:hello"}`)
	assert.Contains(t, s, "frame of 1048577 bytes exceeds the limit of 1048576 bytes")
	assert.Contains(t, s, `"chrome-extension://lllgkhehhfideabmfhnlkocagdfegbhf/"`)
	assert.Regexp(t, `native messaging frames\s+ok`, s)
	assert.Regexp(t, `native host manifest\s+ok`, s)
	assert.NotContains(t, s, "FAILED")
}

func TestSummaryFailsWhenAStepFails(t *testing.T) {
	var out bytes.Buffer
	err := printSummary(&out, []result{{name: "a", ok: true}, {name: "b", ok: false, summary: "error: boom"}})
	require.EqualError(t, err, "1 of 2 steps failed")
	assert.Regexp(t, `b\s+FAILED\s+0s\s+error: boom`, out.String())
}
