// Package webagents implements WebAgents 0.1 for both sides: sites that
// publish first-party actions for browser agents, and agents that discover
// and run them in one dependency-aware batch.
//
// A site publishes a manifest at /webagents.md (one ```webagents fenced
// block) and /.well-known/webagents.json (raw JSON), and accepts batches at
// the manifest's endpoint:
//
//	m, err := webagents.ParseManifest(manifestJSON, nil)
//	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
//		"catalog.find": webagents.ActionFunc(find),
//		"cart.add":     webagents.ActionFunc(addToCart),
//	}, &webagents.HandlerOptions{
//		Origin: "https://shop.example",
//		Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
//			s := loadSession(w, r)
//			return webagents.WithSessionKey(withSession(r.Context(), s), s.ID), nil
//		},
//	})
//	h.Register(mux)
//
// An agent discovers and runs actions with a [Client]:
//
//	var c webagents.Client
//	d, err := c.Discover(ctx, "https://shop.example/products/kbd-75")
//	if err != nil {
//		return browseNormally(err) // a *webagents.DiscoveryError says why
//	}
//	res, err := c.Run(ctx, d, []webagents.Operation{
//		{ID: "find", Action: "catalog.find", Input: json.RawMessage(`{"query":"wireless keyboard"}`)},
//		{ID: "add", Action: "cart.add", Input: json.RawMessage(`{"productId":{"$ref":"find.productId"}}`)},
//		{ID: "verify", Action: "cart.state"},
//	}, &webagents.RunOptions{AllowWrites: true})
//
// Run checks the operations and consent against d's manifest, the one the
// caller saw, and sends one request; [Client.DiscoverAndRun] does both
// steps for a caller that has only the URL.
//
// The pieces are usable on their own: [ParseDocument] and [ParseManifest]
// validate manifests (every problem, with its JSON path); [Client.Discover]
// tells absent, invalid, unsafe and unavailable apart (a *[DiscoveryError]); [Client.Check] is the
// live checker (it never POSTs); [DecodeBatch], [NewPlan] and [Executor.Run] are
// the server's batch pipeline.
//
// # Rules
//
// Dependencies of an operation are its dependsOn, the operations its
// {"$ref": "opId.path"} objects name, and the most recent earlier
// operation whose effect is not read, so writes run in list order and a
// read after a write waits for it. A write also waits for the reads listed
// before it, unless such a read depends on that write. References to later
// operations are legal while the graph is acyclic. Independent operations
// run concurrently up to maxConcurrency, with at least minIntervalMs between
// starts; when one fails nothing else starts, and the response lists what
// was skipped.
//
// # Limits
//
// A discovery document is at most 64,000 characters (code points) and is
// fetched through at most 5 same-origin redirects. The checker and
// NewHandler hold each length limit in UTF-16 code units too, as the
// originating client (JavaScript) counts them. A manifest has 1..64
// actions; names ≤ 64 chars, descriptions ≤ 500, schemas ≤ 12,000
// serialized, 1..16 path prefixes of ≤ 256 chars. A batch has at most
// maxOperations (≤ 32) operations; each input ≤ 128,000 chars; the body
// ≤ 128,000 chars by default (configurable, never below), and 1 MiB on the
// wire either way. A batch's results are at most 1 MB (1,000,000 bytes) by
// default, so that a response never exceeds the 1 MiB transport cap, and it
// has a 30 s deadline. Idempotency keys are remembered 24 h (10,000 keys in
// memory by default).
//
// Schema validation is bounded before it starts. A published inputSchema
// or outputSchema may cost at most 2,000 evaluations at one instance value
// nested 32 deep ([DefaultMaxSchemaCost]; ParseOptions.MaxSchemaCost sets
// another), or the manifest is invalid ("schema too complex"). One
// validation may take at most 50,000 steps (the schema's cost at the
// input's depth times the input's number of values, a string or key
// counting one more per 32 bytes), or the input is refused with
// invalid_input. A validation still running after 1 s is refused at once,
// and at most 4 such long validations run at a time in the process. A
// number written with an exponent beyond ±1000 is refused ("number out of
// range") in manifests, schemas and inputs.
//
// # Concurrency
//
// [Manifest], [Plan], [Handler], [Executor] (once configured), [Client] and the
// limiters and stores of this package are safe for concurrent use.
// Executor.Run returns only when every operation it started has finished;
// ActionHandlers may be called concurrently for independent operations and
// must honour their context, which ends at the batch deadline.
//
// # Security
//
// Descriptions and results are untrusted data: [Manifest.ModelView] drops
// the endpoint and path prefixes and marks the view "untrusted_external_data".
// The Handler uses one fixed public origin and never trusts forwarded Host
// headers; it accepts only POST with application/json, refuses a present
// Origin other than the public origin and Sec-Fetch-Site: cross-site, sends
// no CORS headers, never redirects, and refuses duplicate and case-variant
// JSON keys anywhere in a batch. A handler error that is not an *[Error] is
// reported as 500 "internal" with a generic message. Published schemas may
// not reference files or the network. pathPrefixes is a relevance filter,
// not authorization: every action handler authenticates and authorizes
// itself. Idempotency-Keys are scoped by the credential as presented
// ([WithCredential]) or the session, and hashed before they reach a store; a
// replay carries the stored status and body, never Set-Cookie. The Client enforces consent (RunOptions.AllowWrites,
// AllowIrreversible) before it sends anything.
package webagents
