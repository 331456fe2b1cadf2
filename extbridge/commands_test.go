package extbridge

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/internal/fakeext"
)

func TestNavigateRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		b := fakeext.NewBrowser()
		b.Pages["https://example.com/"] = fakeext.Page{Title: "Example Domain"}
		e.dial(fakeext.Options(browserExt(b)))
		res, err := e.hub.Navigate(t.Context(), "https://example.com/")
		require.NoError(t, err)
		assert.Equal(t, "https://example.com/", res.URL)
		assert.Equal(t, "Example Domain", res.Title)
	})
}
