package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
)

// TestAllThreeTogether: the shop serves on 127.0.0.1; the Go WebAgents
// client signs up and runs find → add → verify in one batch; then the
// browser, driven through the agent protocol, signs in as the same user,
// opens the cart page and its snapshot shows the item.
func TestAllThreeTogether(t *testing.T) {
	ab := startAgentBridge(t, 5*time.Second)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	origin := "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- shop.Serve(ctx, l, &shop.Options{
			Origin:           origin,
			PBKDF2Iterations: 1000,
			Pacing:           &webagents.Pacing{MinIntervalMs: 20, MaxConcurrency: 2},
		})
	}()
	t.Cleanup(func() { cancel(); assert.NoError(t, <-served) })

	// The agent's side: one batch over WebAgents.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	wa := &webagents.Client{HTTPClient: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
	const email, password = "ada@example.com", "correct horse battery"
	res, err := wa.DiscoverAndRun(ctx, origin+"/products", []webagents.Operation{
		{ID: "signup", Action: "account.signUp", Input: json.RawMessage(`{"email":"` + email + `","password":"` + password + `"}`)},
		{ID: "find", Action: "catalog.search", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}, &webagents.RunOptions{AllowWrites: true})
	require.NoError(t, err)
	require.True(t, res.Response.OK, "batch failed: %+v", res.Response)
	var cart struct {
		Items []struct {
			ProductID string `json:"productId"`
			Quantity  int    `json:"quantity"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(res.Response.Results["verify"], &cart))
	require.Len(t, cart.Items, 1)
	assert.Equal(t, "kbd-75", cart.Items[0].ProductID)

	// The browser's side, through the agent protocol.
	c := ab.dial(t)
	defer c.Close()
	_, err = c.Navigate(ctx, agentproto.NavigateParams{URL: origin + "/signin"})
	require.NoError(t, err)
	s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
	require.NoError(t, err)
	emailBox := findNode(t, s, "textbox", "Email")
	pwBox := findNode(t, s, "textbox", "Password")
	_, err = c.Type(ctx, agentproto.TypeParams{Ref: emailBox.Ref, Text: email})
	require.NoError(t, err)
	r, err := c.Type(ctx, agentproto.TypeParams{Ref: pwBox.Ref, Text: password, Submit: true})
	require.NoError(t, err)
	require.True(t, r.OK(), "%+v", r.Result)

	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, err := c.Navigate(ctx, agentproto.NavigateParams{URL: origin + "/cart"})
		require.NoError(ct, err)
		s, err := c.Snapshot(ctx, agentproto.SnapshotParams{})
		require.NoError(ct, err)
		found := false
		for _, n := range s.Nodes {
			if n.Role == "link" && n.Name == "Wireless Keyboard 75%" {
				found = true
				assert.Equal(ct, origin+"/products/kbd-75", n.Href)
			}
		}
		assert.True(ct, found, "the cart page shows the item; nodes: %+v", s.Nodes)
	}, 15*time.Second, 250*time.Millisecond)
}
