package webagents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/webagents"
)

// userKey carries the signed-in user in a request's context.
type userKey struct{}

// findProduct is the site's catalogue search, as an action handler.
func findProduct(_ context.Context, req *webagents.ActionRequest) (any, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	if !strings.Contains(in.Query, "keyboard") {
		return nil, &webagents.Error{Status: 404, Code: "not_found", Message: "No such product."}
	}
	return map[string]string{"productId": "kbd-75"}, nil
}

// productPage is one of the site's own pages.
func productPage(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, "<h1>%s</h1>", r.PathValue("id"))
}

// A site publishes its actions: the handler serves the two discovery
// documents and the batch endpoint beside the site's own pages, and runs
// each operation with the session the site's own cookie names.
func ExampleHandler_Register() {
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String() // in production: "https://shop.example"

	m, err := webagents.ParseManifest([]byte(shopManifest), nil) // every problem, each with its JSON path
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	carts := map[string][]string{} // the site's own state, by user
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(findProduct),
		"cart.add": webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
			user, ok := ctx.Value(userKey{}).(string)
			if !ok {
				return nil, &webagents.Error{Status: 401, Code: webagents.CodeUnauthorized, Message: "Sign in first."}
			}
			// req.Input is already validated against inputSchema; Decode
			// refuses duplicate and case-variant keys.
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			carts[user] = append(carts[user], in.ProductID)
			return map[string]bool{"added": true}, nil
		}),
		"cart.state": webagents.ActionFunc(func(ctx context.Context, _ *webagents.ActionRequest) (any, error) {
			user, _ := ctx.Value(userKey{}).(string)
			mu.Lock()
			defer mu.Unlock()
			return map[string]any{"items": carts[user]}, nil
		}),
	}, &webagents.HandlerOptions{
		Origin: origin, // one fixed public origin
		Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
			c, err := r.Cookie("session") // the site's own cookie or token session
			if err != nil {
				return r.Context(), nil // signed out
			}
			user := c.Value // a real site looks the session up
			return webagents.WithSessionKey(context.WithValue(r.Context(), userKey{}, user), c.Value), nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /products/{id}", productPage) // the site's own pages
	h.Register(mux)                                   // /webagents.md, /.well-known/webagents.json, the endpoint
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	// An agent that is not signed in: the read runs, the write is refused.
	c := &webagents.Client{HTTPClient: srv.Client()}
	res, err := c.DiscoverAndRun(context.Background(), origin+"/products/kbd-75", []webagents.Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
	}, &webagents.RunOptions{AllowWrites: true})
	fmt.Println(string(res.Response.Results["find"]))
	fmt.Println(err)

	// Shutdown lets running batches finish; call it before the server's.
	if err := h.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"productId":"kbd-75"}
	// webagents: operation "add": unauthorized: Sign in first.
}

// exampleSite is a small WebAgents site for the examples. Its Origin is
// left empty, which serves whatever loopback address it is reached on.
func exampleSite() http.Handler {
	m, err := webagents.ParseManifest([]byte(shopManifest), nil)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var cart []string
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(findProduct),
		"cart.add": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			cart = append(cart, in.ProductID)
			return map[string]bool{"added": true}, nil
		}),
		"cart.state": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return map[string]any{"items": cart}, nil
		}),
	}, nil)
	if err != nil {
		panic(err)
	}
	return h
}

// An agent discovers what a page offers and runs a whole workflow in one
// request; an operation's input may refer to an earlier one's result.
func ExampleClient_Run() {
	site := httptest.NewServer(exampleSite()) // a site that publishes actions
	defer site.Close()
	pageURL := site.URL + "/products/kbd-75"

	ctx := context.Background()
	c := &webagents.Client{HTTPClient: site.Client()} // the zero Client works too
	d, err := c.Discover(ctx, pageURL)                // one or two GETs
	if err != nil {
		log.Fatal(err) // a *webagents.DiscoveryError: absent, invalid, unsafe, unavailable, no actions for this page
	}
	fmt.Println(d.Status, len(d.Actions), "actions")

	ops := []webagents.Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}
	_, err = c.Run(ctx, d, ops, nil) // nothing is sent: cart.add writes
	fmt.Println(errors.Is(err, webagents.ErrConsentRequired))

	res, err := c.Run(ctx, d, ops, &webagents.RunOptions{AllowWrites: true}) // one POST; writes and irreversible actions need consent
	if err != nil {
		log.Fatal(err) // a *webagents.Error: the site's code, message and failing operation
	}
	fmt.Println(res.Response.OK, string(res.Response.Results["verify"]))
	// Output:
	// found 3 actions
	// true
	// true {"items":["kbd-75"]}
}
