package agentbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/extbridge"
	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/webagents"
)

// The README's four quick starts. Each is complete: its peer (a bridge, an
// extension, a checker, a site) runs in memory or on loopback inside the
// Example, so go test runs each as the README shows it. TestMarkdownGoBlocks
// keeps the README's copies identical to these bodies.

// An agent on the WebOperator bridge: snapshot the page, click a node.
func Example_agentOnTheBridge() {
	ctx := context.Background()
	// A bridge in memory, its extension scripted; the real one: agentproto.DialEnv(ctx, os.Getenv, nil).
	reply := func(result string) agentprototest.Handler {
		return agentprototest.HandlerFunc(func(context.Context, *agentprototest.Request) (any, error) {
			return json.RawMessage(result), nil
		})
	}
	bridge := agentprototest.NewBridge(&agentprototest.BridgeOptions{Extension: agentprototest.Options{Handler: agentprototest.Mux{
		agentproto.TypeSnapshot: reply(`{"kind":"snapshot","snapshot":{"url":"https://shop.example/","title":"Shop",
			"viewport":{"width":1280,"height":800},"domHash":"d1","takenAt":1,"nodes":[{"ref":"@e1","role":"button","name":"Buy"}]}}`),
		agentproto.TypeClick: reply(`{"kind":"action:result","result":{"ok":true}}`),
	}}})
	defer bridge.Close()
	c, err := bridge.Dial(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	snap, err := c.Snapshot(ctx, agentproto.SnapshotParams{}) // the page's nodes, with @eN refs
	if err != nil {
		log.Fatal(err) // errors.Is(err, agentproto.ErrExtensionOffline), ErrTimeout, …
	}
	res, err := c.Click(ctx, agentproto.ClickParams{Ref: snap.Nodes[0].Ref})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(snap.Nodes[0].Ref, snap.Nodes[0].Name, "clicked:", res.OK()) // a failed click is a result, not an error
	// Output: @e1 Buy clicked: true
}

// A CLI embedding the extension bridge's hub, which the browser extension
// dials into, and driving the person's browser through it.
func Example_cliEmbeddingTheHub() {
	ctx := context.Background()
	token := extbridge.NewToken()                                                   // the user pastes it into the extension's options
	hub, err := extbridge.NewHub(token, &extbridge.HubOptions{Addr: "127.0.0.1:0"}) // default 127.0.0.1:52789
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	l, err := hub.Listen() // a busy port is reported here
	if err != nil {
		log.Fatal(err)
	}
	go hub.Serve(l)

	// extbridgetest's fake extension dials in, as the real one does.
	browser := extbridgetest.NewBrowser()
	browser.SetPage("https://shop.example/", extbridgetest.Page{Title: "Shop"})
	ext, err := extbridgetest.Dial(ctx, "ws://"+hub.Addr().String()+"/ws", &extbridgetest.Options{Token: token, Browser: browser})
	if err != nil {
		log.Fatal(err)
	}
	defer ext.Close()

	if err := hub.WaitConnected(ctx); err != nil { // until the extension says hello with the token
		log.Fatal(err)
	}
	page, err := hub.Navigate(ctx, "https://shop.example/")
	if err != nil {
		log.Fatal(err) // errors.Is(err, extbridge.ErrNotConnected), ErrTimeout, ErrInvalidCommand, …
	}
	fmt.Println(page.Title, page.URL) // also Click, Type, Read, Screenshot, Tabs; chat, approvals
	// Output: Shop https://shop.example/
}

// A site serving a webagents.Handler: its actions published for agents
// beside its own pages.
func Example_siteServingAHandler() {
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String() // in production: "https://shop.example"
	m, err := webagents.ParseManifest([]byte(`{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},"actions":{
		"catalog.find":{"inputSchema":{"type":"object","properties":{"query":{"type":"string"}}}},"cart.add":{"effect":"write"}}}`), nil)
	if err != nil {
		log.Fatal(err) // a *webagents.ValidationError: every problem, with its JSON path
	}
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"catalog.find": webagents.ActionFunc(func(_ context.Context, req *webagents.ActionRequest) (any, error) {
			return map[string]string{"productId": "kbd-75"}, nil // req.Decode reads the input, already valid against inputSchema
		}),
		"cart.add": webagents.ActionFunc(func(context.Context, *webagents.ActionRequest) (any, error) {
			return map[string]bool{"added": true}, nil
		}),
	}, &webagents.HandlerOptions{Origin: origin})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux() // the site's own pages go here too
	h.Register(mux)           // /webagents.md, /.well-known/webagents.json and the endpoint
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()
	defer h.Shutdown(context.Background()) // before the server's: running batches finish

	// The live checker, as an agent's developer runs it: it never POSTs.
	rep, err := (&webagents.Client{HTTPClient: srv.Client()}).Check(context.Background(), origin+"/")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid:", rep.Valid, "actions:", rep.ActionsInScope)
	// Output: valid: true actions: [cart.add catalog.find]
}

// An agent running a batch on a site that publishes WebAgents actions:
// discover them, then run a whole workflow in one request.
func Example_agentRunningABatch() {
	// A stand-in site with two actions: its manifest, and the answer of its endpoint.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/webagents.json":
			fmt.Fprint(w, `{"version":"0.1","workflow":{"endpoint":"/wf"},"actions":{"catalog.find":{},"cart.add":{"effect":"write"}}}`)
		case "/wf":
			fmt.Fprint(w, `{"protocol":"webagents/0.1","ok":true,"results":{"find":{"productId":"kbd-75"},"add":{"added":true}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	ctx := context.Background()
	c := &webagents.Client{HTTPClient: site.Client()} // the zero Client works too
	d, err := c.Discover(ctx, site.URL+"/products/kbd-75")
	if err != nil {
		log.Fatal(err) // a *webagents.DiscoveryError: absent, invalid, unsafe, unavailable, …
	}
	fmt.Println(d.Status, len(d.Actions), "actions") // a nil error: found, with a usable manifest

	ops := []webagents.Operation{
		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"keyboard"}`)},
		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
	}
	_, err = c.Run(ctx, d, ops, nil) // nothing is sent: cart.add writes
	fmt.Println(errors.Is(err, webagents.ErrConsentRequired))
	res, err := c.Run(ctx, d, ops, &webagents.RunOptions{AllowWrites: true})
	if err != nil {
		log.Fatal(err) // a *webagents.Error: the site's code, message and failing operation
	}
	fmt.Println(string(res.Response.Results["add"]))
	// Output:
	// found 2 actions
	// true
	// {"added":true}
}
