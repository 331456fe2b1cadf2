package extbridge

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every sentinel's text carries the package prefix; the typed errors keep
// the reference wording agents' prompts know.
func TestSentinelPrefix(t *testing.T) {
	for _, err := range []error{ErrNotConnected, ErrTimeout, ErrUnknownTool, ErrDisconnected, ErrInvalidResult,
		ErrClosed, ErrServerClosed, ErrUnknownConversation, ErrInvalidEvent, ErrFrameTooLarge, ErrInvalidCommand} {
		assert.True(t, strings.HasPrefix(err.Error(), "extbridge: "), err.Error())
	}
	nc := &NotConnectedError{Port: 52789}
	assert.Equal(t, "no browser extension connected on port 52789", nc.Error())
	assert.True(t, errors.Is(nc, ErrNotConnected))
	to := &TimeoutError{Action: "navigate"}
	assert.Equal(t, "timed out waiting for the browser extension to navigate", to.Error())
	assert.True(t, errors.Is(to, ErrTimeout))
}
