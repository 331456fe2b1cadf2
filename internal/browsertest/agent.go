package browsertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
)

// DialAgent connects to the agent protocol socket of a native host that
// Chromium starts, once the host is up and the extension has said hello:
// until then it retries every 100 ms. It gives up when ctx ends, with the
// last error seen. The client checks that the host runs as this user.
func DialAgent(ctx context.Context, socket, token string) (*agentproto.Client, error) {
	var last error
	for {
		c, err := agentproto.Dial(ctx, socket, &agentproto.ClientOptions{Token: token})
		if err == nil {
			h, herr := c.Health(ctx)
			if herr == nil && h.ExtensionOnline() {
				return c, nil
			}
			c.Close()
			err = herr
			if err == nil {
				err = errors.New("extension offline")
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
