package extension_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentbridge/agentbridge/extension"
	iext "github.com/agentbridge/agentbridge/internal/extension"
)

// TestConstantsAreTheBuiltExtensions: the public constants, written out
// for the documentation, are those of the extension Write writes.
func TestConstantsAreTheBuiltExtensions(t *testing.T) {
	assert.Equal(t, iext.ID, extension.ID)
	assert.Equal(t, iext.NativeOrigin, extension.NativeOrigin)
	assert.Equal(t, iext.Origin, extension.Origin)
	assert.Equal(t, iext.Version, extension.Version)
}
