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
// Each limit is a constant (the table of [MaxDocumentChars] and its
// neighbours) or an option with a documented default:
//
//   - Discovery documents: at most [MaxDocumentChars] (64,000) code points
//     and 256,000 bytes, fetched through at most [MaxRedirects] (5)
//     same-origin redirects (a cross-origin one is unsafe). [Client.Check],
//     validation and [NewHandler] (the strict parse, [ParseOptions].Strict)
//     hold each length limit in UTF-16 code units too, as the originating
//     client (JavaScript) counts them, schemas as JSON.stringify writes them;
//     [Client.Discover] only warns. A markdown block that the originating
//     client would read differently is invalid.
//   - Manifests: 1..[MaxActions] (64) actions; names
//     ^[A-Za-z][A-Za-z0-9_.:-]*$ of at most 64 characters; descriptions ≤
//     500; each schema ≤ 12,000 characters serialized, compiled with every
//     file: and network reference refused; 1..16 path prefixes of ≤ 256
//     characters without a backslash; the endpoint ≤ 2,048 characters, not
//     only white space, without a backslash, same-origin as a browser
//     resolves it. Workflow: maxOperations 1..32 (default 32); minIntervalMs
//     0..2,000 (default 0); maxConcurrency 1..maxOperations (default
//     min(maxOperations, 4), 1 when not parallel).
//   - Schemas: a static cost of at most [DefaultMaxSchemaCost] (2,000)
//     evaluations per instance value, each enum member one more
//     ([ParseOptions].MaxSchemaCost), else the manifest is invalid ("schema
//     too complex", [ErrSchemaTooComplex]); each validation at most
//     50,000 steps (the cost at the input's depth times its values, strings
//     and keys one more per 32 bytes), else invalid_input; a validation
//     estimated over 2,000 steps also runs under a 1 s wall-clock budget,
//     at most 4 at once, else invalid_input at once. Numbers with an
//     exponent beyond ±1,000 are refused in manifests, schemas and inputs.
//   - Batches: at most maxOperations operations; ids
//     ^[A-Za-z][A-Za-z0-9_-]*$ of at most 64 characters; dependsOn at most 32
//     ids (a longer list, which cannot be valid, is refused with
//     invalid_request before its entries are compared); each input at most
//     [MaxInputChars] (128,000) characters with its references resolved
//     (resolution stops with payload_too_large once references have added
//     512,000 bytes; each result is decoded at most once per batch); the
//     body at most [DefaultMaxBodyChars] (configurable, never below) and
//     [TransportLimitBytes] (1 MiB) on the wire either way.
//   - Execution: a [DefaultDeadline] (30 s) batch deadline
//     ([HandlerOptions].Deadline), within which the request body must also
//     arrive (else 400); results at most [DefaultMaxResultBytes] (1 MB) per
//     batch (result_too_large), so a response never exceeds the 1 MiB cap.
//     A started batch runs to completion or its deadline whatever the client
//     does; a retry meanwhile gets 409 idempotency_in_progress with
//     Retry-After (the remaining deadline). [Handler.Shutdown] waits up to
//     its ctx, then cancels ([ErrHandlerClosed]); batches arriving while it
//     shuts down get 503 unavailable. A refusal sent before the body is
//     read closes the connection at once.
//   - Idempotency: keys of at most [MaxIdempotencyKeyLen] (255) visible
//     ASCII bytes, kept [DefaultIdempotencyWindow] (24 h,
//     [HandlerOptions].IdempotencyWindow). The in-memory store holds
//     [DefaultIdempotencyEntries] (10,000) keys and [DefaultIdempotencyBytes]
//     (64 MiB) of stored responses, at most a tenth of each per client (the
//     session, or the address without one or for an anonymous session),
//     checked at reservation ([MemoryIdempotencyStoreOptions]). Live records
//     are never evicted: when full, a new keyed request gets 503
//     idempotency_unavailable with Retry-After (when the oldest record, of
//     the store or of the client, expires).
//   - Pacing: a [SessionLimiter] keeps Interval between one session's starts
//     across batches; a wait over MaxWait (10 s) is 429; it tracks 10,000
//     sessions. Anonymous sessions ([WithAnonymousSessionKey]) and requests
//     without a session are paced by client address ([AddressPacing]).
//   - The client: when ctx has no deadline, Discover is bounded by
//     [DefaultDiscoverTimeout] (10 s), Check by [DefaultCheckTimeout] (20 s)
//     and Run by [DefaultRunTimeout] (45 s) (Client.DiscoverTimeout,
//     CheckTimeout, RunTimeout; negative: none). Batch responses are read up
//     to 1 MiB, HEAD bodies never; its own transport ([NewHTTPClient]) caps
//     response headers at [MaxResponseHeaderBytes] (64 KiB). Responses are
//     decoded strictly and must name only the batch's operations, else a
//     [*ProtocolError] carrying the body; the endpoint's redirects are
//     refused.
//   - JSON text, everywhere (manifests, batches, responses, results
//     included): invalid UTF-8 and lone surrogate escapes ("\ud800") are
//     refused, never decoded as U+FFFD; duplicate keys are refused, and keys
//     that differ only in case except inside published schemas. The error
//     names the key's path, each key cut to 64 bytes and the path to 256
//     plus "…", non-graphic characters shown as U+FFFD.
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
