package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
)

// actionLog records the actions the shop ran, for the pacing table.
type actionLog struct {
	mu      sync.Mutex
	entries []actionEntry
}

type actionEntry struct {
	op, action string
	start      time.Time
	took       time.Duration
}

func (l *actionLog) add(op, action string, start time.Time, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, actionEntry{op, action, start, took})
}

func (l *actionLog) take() []actionEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries
	l.entries = nil
	return e
}

// startShop serves the demo shop on a free loopback port until the tour
// ends.
func (r *runner) startShop(ctx context.Context) error {
	if r.shopURL != "" {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	origin := "http://" + l.Addr().String()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() {
		done <- shop.Serve(sctx, l, &shop.Options{Origin: origin, OnAction: r.actions.add, PBKDF2Iterations: r.opts.PBKDF2Iterations})
	}()
	r.atEnd(func() { cancel(); <-done })
	r.shopURL = origin
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	r.agent = &webagents.Client{HTTPClient: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	r.logf("the shop serves its pages and its agent endpoint at %s", origin)
	return nil
}

// discoveryStep starts the shop and discovers its actions as an agent would.
func discoveryStep(ctx context.Context, r *runner) (string, error) {
	if err := r.startShop(ctx); err != nil {
		return "", err
	}
	page := r.shopURL + "/products/kbd-75"
	d, err := r.agent.Discover(ctx, page)
	if err != nil {
		return "", err // a *webagents.DiscoveryError says why there is no manifest
	}
	r.logf("GET %s → manifest %s, endpoint %s", d.DocumentURL, d.Manifest.Version, d.Endpoint)
	names := make([]string, 0, len(d.Actions))
	for _, a := range d.Actions {
		names = append(names, fmt.Sprintf("%s (%s)", a.Name, a.Effect))
	}
	r.logf("actions in scope for %s: %v", "/products/kbd-75", names)
	p := d.Manifest.Workflow.Pacing
	r.logf("the site asks for pacing: at least %d ms between starts, %d at once", p.MinIntervalMs, p.MaxConcurrency)
	return fmt.Sprintf("%d actions in scope; pacing %d ms, %d at once", len(d.Actions), p.MinIntervalMs, p.MaxConcurrency), nil
}

// batchStep runs a whole workflow in one POST and shows, from the server's
// side, when each operation started.
func batchStep(ctx context.Context, r *runner) (string, error) {
	if err := r.startShop(ctx); err != nil {
		return "", err
	}
	ops := []webagents.Operation{
		{ID: "findKeyboard", Action: "catalog.search", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "findMouse", Action: "catalog.search", Input: json.RawMessage(`{"query":"wireless mouse"}`)},
		{ID: "signUp", Action: "account.signUp", Input: json.RawMessage(`{"email":"demo@example.com","password":"demo password 123"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"findKeyboard.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}
	for _, op := range ops {
		r.logf("  %-12s %-15s %s", op.ID, op.Action, op.Input)
	}
	d, err := r.agent.Discover(ctx, r.shopURL+"/products")
	if err != nil {
		return "", err
	}
	r.actions.take()
	sent := time.Now()
	res, err := r.agent.Run(ctx, d, ops, &webagents.RunOptions{AllowWrites: true}) // one POST
	if err != nil {
		return "", err
	}
	if !res.Response.OK {
		return "", fmt.Errorf("batch failed: %s (%s)", res.Response.Error, res.Response.Code)
	}
	r.logf("one POST, answered %d in %s; on the server:", res.StatusCode, time.Since(sent).Round(time.Millisecond))
	entries := r.actions.take()
	slices.SortFunc(entries, func(a, b actionEntry) int { return a.start.Compare(b.start) })
	if len(entries) != len(ops) {
		return "", fmt.Errorf("the server ran %d operations, want %d", len(entries), len(ops))
	}
	first := entries[0].start
	for _, e := range entries {
		r.logf("  %-12s started at +%4d ms, took %3d ms", e.op, e.start.Sub(first).Milliseconds(), e.took.Milliseconds())
	}
	interval := time.Duration(res.Response.Pacing.MinIntervalMs) * time.Millisecond
	for i := 1; i < len(entries); i++ {
		if gap := entries[i].start.Sub(entries[i-1].start); gap < interval {
			return "", fmt.Errorf("operations started %s apart, under the %s pacing", gap, interval)
		}
	}
	var cart struct {
		Items []struct {
			ProductID string `json:"productId"`
			Name      string `json:"name"`
			Quantity  int    `json:"quantity"`
		} `json:"items"`
	}
	if err := json.Unmarshal(res.Response.Results["verify"], &cart); err != nil {
		return "", err
	}
	if len(cart.Items) != 1 || cart.Items[0].ProductID != "kbd-75" {
		return "", fmt.Errorf("the cart holds %+v, want one kbd-75", cart.Items)
	}
	r.logf("verify: the cart holds %d × %s (%s), passed by $ref from findKeyboard", cart.Items[0].Quantity, cart.Items[0].Name, cart.Items[0].ProductID)
	return fmt.Sprintf("%d operations in one POST, starts ≥ %d ms apart; the cart holds kbd-75",
		len(ops), res.Response.Pacing.MinIntervalMs), nil
}

// consentStep shows a write refused by the client before anything is sent.
func consentStep(ctx context.Context, r *runner) (string, error) {
	if err := r.startShop(ctx); err != nil {
		return "", err
	}
	d, err := r.agent.Discover(ctx, r.shopURL+"/products")
	if err != nil {
		return "", err
	}
	r.actions.take()
	_, err = r.agent.Run(ctx, d, []webagents.Operation{
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":"mouse-w"}`)},
	}, nil)
	var ce *webagents.ConsentError
	if !errors.As(err, &ce) {
		return "", fmt.Errorf("a write without consent was not refused: %v", err)
	}
	if ran := r.actions.take(); len(ran) > 0 {
		return "", fmt.Errorf("the server ran %d operations of a refused batch", len(ran))
	}
	r.logf("refused before any request: %v", err)
	r.logf("nothing reached the server; pass RunOptions{AllowWrites: true} to allow it")
	return "cart.add refused without AllowWrites; nothing sent", nil
}
