package uuid

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNew(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := New()
		assert.Regexp(t, form, id)
		assert.False(t, seen[id], "ids repeat")
		seen[id] = true
	}
	b := Append([]byte(`"`))
	assert.Len(t, b, 1+Len)
	assert.Regexp(t, form, string(b[1:]))
}
