package main

import (
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/agentbridge/agentbridge/mcp/mcptools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCaptureResources: a screenshot through the bridge is kept as a
// resource, linked from the result, and read back; with --image-links the
// result carries the link alone.
func TestCaptureResources(t *testing.T) {
	path := socketPath(t)
	startBridge(t, path, newStandIn(), nil)
	transports(t, bridgeEnv(path, bridgeToken), nil, nil, func(t *testing.T, cs *mcp.ClientSession) {
		res := call(t, cs, tools.BrowserScreenshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		var link *mcp.ResourceLink
		var images int
		for _, c := range res.Content {
			switch c := c.(type) {
			case *mcp.ResourceLink:
				link = c
			case *mcp.ImageContent:
				images++
			}
		}
		require.NotNil(t, link, "%#v", res.Content)
		assert.Equal(t, 1, images)
		assert.Regexp(t, `^`+mcptools.CaptureURIPrefix+`\d+$`, link.URI)
		read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: link.URI})
		require.NoError(t, err)
		assert.Equal(t, fakeJPEG, read.Contents[0].Blob)
		assert.Equal(t, "image/jpeg", read.Contents[0].MIMEType)
	})
	t.Run("image-links", func(t *testing.T) {
		cs, _ := startStdio(t, nil, bridgeEnv(path, bridgeToken), "--image-links")
		res := call(t, cs, tools.BrowserScreenshot, map[string]any{})
		require.False(t, res.IsError, text(res))
		for _, c := range res.Content {
			_, image := c.(*mcp.ImageContent)
			assert.False(t, image, "no image in the result")
		}
	})
}
