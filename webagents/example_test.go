package webagents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/agentbridge/agentbridge/webagents"
)

const shopManifest = `{
  "version": "0.1",
  "workflow": {"endpoint": "/api/agent/workflow", "maxOperations": 8,
               "pacing": {"minIntervalMs": 0, "maxConcurrency": 2}},
  "actions": {
    "catalog.find": {"description": "Find an exact product; reference productId.",
      "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    "cart.add":   {"pathPrefixes": ["/products"], "effect": "write", "description": "Add one productId to the cart."},
    "cart.state": {"pathPrefixes": ["/products"], "description": "Return the cart."}
  }
}`

func ExampleParseManifest() {
	m, err := webagents.ParseManifest([]byte(shopManifest), &webagents.ParseOptions{BaseURL: "https://shop.example/"})
	if err != nil {
		panic(err)
	}
	for _, a := range m.ActionsFor("/products/kbd-75") {
		fmt.Println(a.Name, a.Effect)
	}
	fmt.Println("on /about:", len(m.ActionsFor("/about")))
	// Output:
	// cart.add write
	// cart.state read
	// catalog.find read
	// on /about: 1
}

func ExampleParseManifest_problems() {
	_, err := webagents.ParseManifest([]byte(`{"version":"0.1","workflow":{"endpoint":"https://evil.example/api"},
		"actions":{"cart.add":{"effect":"delete","pathPrefixes":["products"]}}}`),
		&webagents.ParseOptions{BaseURL: "https://shop.example/"})
	var ve *webagents.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p.Path)
		}
	}
	// Output:
	// $.actions["cart.add"].effect
	// $.actions["cart.add"].pathPrefixes[0]
	// $.workflow.endpoint
}

func ExampleNewPlan() {
	m, _ := webagents.ParseManifest([]byte(shopManifest), nil)
	b, _ := webagents.DecodeBatch([]byte(`{"version":"0.1","operations":[
		{"id":"find","action":"catalog.find","input":{"query":"wireless keyboard"}},
		{"id":"add","action":"cart.add","input":{"productId":{"$ref":"find.productId"}}},
		{"id":"verify","action":"cart.state"}]}`))
	p, err := webagents.NewPlan(m, "/products", b)
	if err != nil {
		panic(err)
	}
	for i, op := range p.Operations {
		fmt.Println(op.ID, "after", p.DependsOn(i))
	}
	// Output:
	// find after []
	// add after [find]
	// verify after [add]
}

func ExampleExecutor_Run() {
	m, _ := webagents.ParseManifest([]byte(shopManifest), nil)
	b, _ := webagents.DecodeBatch([]byte(`{"version":"0.1","operations":[
		{"id":"find","action":"catalog.find","input":{"query":"wireless keyboard"}},
		{"id":"add","action":"cart.add","input":{"productId":{"$ref":"find.productId"}}},
		{"id":"verify","action":"cart.state"}]}`))
	p, _ := webagents.NewPlan(m, "", b)
	e := &webagents.Executor{Handlers: map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]string{"productId": "kbd-75"}, nil
		}),
		"cart.add": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			fmt.Println("add got", string(req.Input))
			return nil, &webagents.Error{Status: 401, Code: "unauthorized", Message: "Sign in first."}
		}),
		"cart.state": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]any{"items": []any{}}, nil
		}),
	}}
	out := e.Run(context.Background(), p)
	fmt.Println(string(out.Result("find")))
	fmt.Println(out.Err.Operation, out.Err.Code, out.Err.Message)
	fmt.Println("skipped", out.Skipped)
	// Output:
	// add got {"productId":"kbd-75"}
	// {"productId":"kbd-75"}
	// add unauthorized Sign in first.
	// skipped [verify]
}

// A site and an agent: the Handler serves the discovery documents and the
// endpoint; the Client discovers, checks consent, plans and posts.
func ExampleNewHandler() {
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	m, _ := webagents.ParseManifest([]byte(shopManifest), nil)
	var cart []string
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
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
		}),
		"cart.add": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			var in struct {
				ProductID string `json:"productId"`
			}
			if err := req.Decode(&in); err != nil {
				return nil, err
			}
			cart = append(cart, in.ProductID)
			return map[string]bool{"added": true}, nil
		}),
		"cart.state": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]any{"items": cart}, nil
		}),
	}, &webagents.HandlerOptions{
		Origin: origin,
	})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()

	c := &webagents.Client{HTTPClient: srv.Client()}
	ops := []webagents.Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
		{ID: "verify", Action: "cart.state"},
	}
	_, err = c.DiscoverAndRun(context.Background(), origin+"/products/kbd-75", ops, nil)
	fmt.Println(errors.Is(err, webagents.ErrConsentRequired))

	res, err := c.DiscoverAndRun(context.Background(), origin+"/products/kbd-75", ops, &webagents.RunOptions{AllowWrites: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Response.Results["verify"]))
	// Output:
	// true
	// {"items":["kbd-75"]}
}

func ExampleClient_Discover() {
	srv := httptest.NewServer(nil) // serves 404 everywhere
	defer srv.Close()
	c := &webagents.Client{HTTPClient: srv.Client()}
	_, err := c.Discover(context.Background(), srv.URL+"/products")
	var de *webagents.DiscoveryError
	if errors.As(err, &de) { // no usable manifest: fall back to normal browsing
		fmt.Println(de.Discovery.Status, errors.Is(err, webagents.ErrNoManifest))
	}
	// Output: absent true
}

// The checker smoke-tests a live site with GET and HEAD only.
func ExampleClient_Check() {
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	m, _ := webagents.ParseManifest([]byte(shopManifest), nil)
	noop := webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) { return nil, nil })
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{"catalog.find": noop, "cart.add": noop, "cart.state": noop}, &webagents.HandlerOptions{Origin: origin})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()

	c := &webagents.Client{HTTPClient: srv.Client()}
	rep, err := c.Check(context.Background(), origin+"/about")
	if err != nil {
		panic(err)
	}
	fmt.Println("valid:", rep.Valid, "requests:", len(rep.Documents))
	fmt.Println("in scope:", rep.ActionsInScope)
	// Output:
	// valid: true requests: 4
	// in scope: [catalog.find]
}
