// Package tools is the agent tool catalogue of the WebOperator reference
// bridge: browser_snapshot, browser_navigate, browser_click, … and
// weboperator_execute_goal, with their descriptions, JSON Schemas and the
// texts the reference MCP server shows a model.
//
// [List] returns the catalogue, for a model's tool list (an MCP server, an
// agent's own loop, the HTTP API's /v1/tools); [Call] checks a tool call's
// arguments and runs it through an [agentproto.Caller]: an
// *[agentproto.Client] on the agent socket, or a bridge's extension in
// process ([github.com/agentbridge/agentbridge/agentproto/bridge.ExtensionCaller]).
// Its [Result] carries the command's result as sent, the reference's text
// and a structured value valid against the tool's output schema.
//
// # Quick start
//
//	c, err := agentproto.DialEnv(ctx, os.Getenv, nil) // WEBOPERATOR_AGENT_SOCKET, WEBOPERATOR_API_TOKEN
//	if err != nil { ... }
//	for _, t := range tools.List() { ... } // t.Name, t.Description, t.InputSchema
//	res, err := tools.Call(ctx, c, name, args, nil)
//	var bad *tools.ArgumentsError
//	if errors.As(err, &bad) { ... } // bad.Path names the offending argument
//	fmt.Println(res.Text)
//
// # Limits
//
// Arguments: at most 1 MiB (Chrome's limit) of strict JSON (no
// duplicate or case-variant keys), checked against the tool's schema
// before anything is sent. Each command is bounded by ctx, or when ctx has
// no deadline by [DefaultTimeout] (30 s; [DefaultNavigateTimeout], 60 s,
// for browser_navigate); weboperator_execute_goal waits its timeoutMs
// ([DefaultGoalTimeout], 120 s), at most [CallOptions].MaxGoalTimeout
// ([DefaultMaxGoalTimeout], 1 h), and a cancelled one stops its task
// within 5 s. A result's [Result].Text (JSON as
// JavaScript's JSON.stringify writes it) is indented only 64 levels deep
// (deeper containers are written compactly) and stops at 16 MiB with a
// line saying how many of the result's bytes were left out: a deeply
// nested result costs the size of its text, never the square of its
// depth; reordering objects as JavaScript orders their members copies at
// most four times the result's size (beyond that, the result's own order
// is kept). [Result].Structured carries results at most 990 levels deep
// (the go-sdk refuses messages nested 1,000 deep). Every limit is checked before
// allocating.
//
// # Concurrency
//
// [List] and [Call] are safe for concurrent use; [List] returns a new copy
// each time. [Call] is as concurrent as its Caller: many calls may share
// one [agentproto.Client].
//
// # Security
//
// Tool arguments come from a model and are hostile: they are decoded
// strictly and validated before they reach the browser, and a tool never
// sends a command other than its own. Results are the page's content,
// untrusted too: [Result].Text relays them as text, and a program printing
// them to a terminal must make control characters visible.
package tools
