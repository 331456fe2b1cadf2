package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/webagents"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools [Sites.AddTools] always registers, next to one tool per action.
const (
	ToolWebAgentsBatch  = "webagents_batch"
	ToolWebAgentsStatus = "webagents_status"
)

// SiteToolsOptions configures [DiscoverSites]. Nil means defaults.
type SiteToolsOptions struct {
	// Client discovers manifests and runs batches. Nil means a
	// webagents.Client logging to Logger whose HTTP client is
	// webagents.NewHTTPClient (the webagents client's own transport limits)
	// with a [NewSiteCookieJar]: a site's session lasts across tool calls and
	// never reaches another site. A Client of your own should keep cookies
	// per origin the same way.
	Client *webagents.Client
	// AllowWrites permits actions whose effect is "write", and
	// AllowIrreversible those whose effect is "irreversible", exactly as
	// webagents.RunOptions. Default: reads only.
	AllowWrites       bool
	AllowIrreversible bool
	// WritesFlag and IrreversibleFlag name, in refusals, what the user sets
	// to allow writes and irreversible actions. Defaults:
	// "--allow-writes" and "--allow-irreversible".
	WritesFlag       string
	IrreversibleFlag string
	// ReservedNames are tool names already taken on the server (by other
	// sources): an action with such a name gets its site's prefix.
	ReservedNames []string
	// Logger receives discovery outcomes. Nil is silent.
	Logger *slog.Logger
}

// SiteStatus is what discovery found for one site.
type SiteStatus struct {
	// URL is the page URL given.
	URL string `json:"url"`
	// Status is the webagents discovery status ("found", "absent",
	// "invalid", …).
	Status string `json:"status"`
	// Error says why the site has no tools, or why an action was skipped.
	Error string `json:"error,omitempty"`
	// Endpoint is the site's workflow endpoint, when found.
	Endpoint string `json:"endpoint,omitempty"`
	// Tools are the names of the tools registered for the site's actions.
	Tools []string `json:"tools"`
	// Skipped lists actions that could not become tools, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// Sites are the WebAgents sites [DiscoverSites] found, ready to become tools
// of an [mcp.Server] with AddTools. A Sites is safe for concurrent use once
// made.
type Sites struct {
	opts     SiteToolsOptions
	pages    []string
	statuses []SiteStatus
	actions  []siteAction
}

type siteAction struct {
	name, page string
	action     *webagents.Action
}

// DiscoverSites discovers the WebAgents manifest of each page URL (all at
// once, within ctx) and plans one tool per action in scope for that page.
// A site whose discovery fails (no manifest, an invalid one, unreachable) gets
// no tools and a status saying why; the other sites are unaffected.
func DiscoverSites(ctx context.Context, pages []string, opts *SiteToolsOptions) *Sites {
	st := &Sites{pages: slices.Clone(pages)}
	if opts != nil {
		st.opts = *opts
	}
	if st.opts.Client == nil {
		st.opts.Client = &webagents.Client{HTTPClient: webagents.NewHTTPClient(NewSiteCookieJar()), Logger: st.opts.Logger}
	}
	if st.opts.WritesFlag == "" {
		st.opts.WritesFlag = "--allow-writes"
	}
	if st.opts.IrreversibleFlag == "" {
		st.opts.IrreversibleFlag = "--allow-irreversible"
	}
	taken := map[string]bool{ToolWebAgentsBatch: true, ToolWebAgentsStatus: true}
	for _, n := range st.opts.ReservedNames {
		taken[n] = true
	}
	var wg sync.WaitGroup
	discoveries := make([]*webagents.Discovery, len(pages))
	errs := make([]error, len(pages))
	for i, page := range pages {
		wg.Go(func() { discoveries[i], errs[i] = st.opts.Client.Discover(ctx, page) })
	}
	wg.Wait()
	for i, page := range pages {
		status := SiteStatus{URL: page, Tools: []string{}}
		d, err := discoveries[i], errs[i]
		switch {
		case err != nil:
			status.Status, status.Error = "error", err.Error()
		case d.Status != webagents.DiscoveryFound:
			status.Status = d.Status.String()
			status.Error = d.Status.String()
			if d.Err != nil {
				status.Error = d.Err.Error()
			}
		default:
			status.Status, status.Endpoint = d.Status.String(), d.Endpoint
			for _, a := range d.Actions {
				name, problem := toolName(a.Name, page, taken)
				if problem == "" {
					problem = objectSchema(a.InputSchema)
				}
				if problem != "" {
					status.Skipped = append(status.Skipped, a.Name+": "+problem)
					continue
				}
				taken[name] = true
				st.actions = append(st.actions, siteAction{name: name, page: page, action: a})
				status.Tools = append(status.Tools, name)
			}
		}
		if st.opts.Logger != nil {
			if status.Error != "" {
				st.opts.Logger.Warn("webagents site has no tools", "url", page, "status", status.Status, "error", status.Error)
			} else {
				st.opts.Logger.Info("webagents site", "url", page, "tools", len(status.Tools), "skipped", len(status.Skipped))
			}
		}
		st.statuses = append(st.statuses, status)
	}
	return st
}

// Statuses returns each site's discovery outcome, in the order given.
func (st *Sites) Statuses() []SiteStatus {
	out := slices.Clone(st.statuses)
	for i := range out {
		out[i].Tools = slices.Clone(out[i].Tools)
		out[i].Skipped = slices.Clone(out[i].Skipped)
	}
	return out
}

// AddTools registers on s one tool per action (name, description and
// inputSchema from the manifest; readOnlyHint for reads, destructiveHint for
// irreversible actions), plus webagents_batch, which runs a dependency-aware
// batch with $ref on one site, and webagents_status, which reports every
// site's discovery outcome (so a site whose manifest is invalid is visible to
// the agent, with the reason, instead of silently missing).
//
// Calls run through webagents.Client.Run: the consent gates, the input
// validation against the action's schema and the batch planning happen before
// anything is sent, and a refusal for consent names the flag that would allow
// it. The site's answer (its envelope: results, errors, pacing) is the tool's
// text, unchanged; a failed batch is a result with isError.
func (st *Sites) AddTools(s *mcp.Server) {
	for _, a := range st.actions {
		st.addAction(s, a.name, a.page, a.action)
	}
	st.addBatch(s, st.pages)
	st.addStatus(s)
}

// toolName makes an MCP tool name for an action: its own name when that is a
// valid, free tool name, else prefixed with the site's host.
func toolName(action, page string, taken map[string]bool) (string, string) {
	clean := sanitizeName(action)
	if clean == action && !taken[clean] && len(clean) <= 128 {
		return clean, ""
	}
	host := "site"
	if u, err := url.Parse(page); err == nil && u.Host != "" {
		host = u.Host
	}
	name := sanitizeName(host) + "_" + clean
	if len(name) > 128 || taken[name] {
		return "", "no free tool name for this action"
	}
	return name, ""
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

// objectSchema says why schema cannot be an MCP inputSchema ("" when it can:
// MCP requires a JSON object with type "object").
func objectSchema(schema json.RawMessage) string {
	if schema == nil {
		return ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		return "inputSchema is not a JSON object"
	}
	if string(m["type"]) != `"object"` {
		return `inputSchema does not have type "object", which MCP requires`
	}
	return ""
}

func (st *Sites) runOptions() *webagents.RunOptions {
	return &webagents.RunOptions{AllowWrites: st.opts.AllowWrites, AllowIrreversible: st.opts.AllowIrreversible}
}

func (st *Sites) addAction(s *mcp.Server, name, page string, a *webagents.Action) {
	schema := a.InputSchema
	if schema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	ann := &mcp.ToolAnnotations{ReadOnlyHint: a.Effect == webagents.EffectRead}
	if a.Effect != webagents.EffectRead {
		destructive := a.Effect == webagents.EffectIrreversible
		ann.DestructiveHint = &destructive
	}
	action := a.Name
	s.AddTool(&mcp.Tool{
		Name:        name,
		Description: a.Description,
		InputSchema: schema,
		Annotations: ann,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		input := req.Params.Arguments
		if len(input) == 0 || string(input) == "null" {
			input = json.RawMessage("{}")
		}
		ops := []webagents.Operation{{ID: "call", Action: action, Input: input}}
		return st.run(ctx, req, page, ops), nil
	})
}

// batchIn is webagents_batch's arguments.
type batchIn struct {
	Site       string                `json:"site,omitempty" jsonschema:"the page URL of the site (one of the --site URLs); optional when there is one site"`
	Operations []webagents.Operation `json:"operations" jsonschema:"the operations: {id, action, input, dependsOn}; an input value {\"$ref\":\"opId.path\"} is another operation's result"`
}

func (st *Sites) addBatch(s *mcp.Server, pages []string) {
	desc := "Run several WebAgents actions of one site in one dependency-aware batch. Each operation is {id, action, input?, dependsOn?}; " +
		`an input value {"$ref":"opId.path"} is replaced by that operation's result. The site runs independent operations concurrently under its own pacing. ` +
		"Sites: " + strings.Join(pages, ", ")
	schema := json.RawMessage(`{"type":"object","properties":{` +
		`"site":{"type":"string","description":"the page URL of the site, one of the configured sites; optional when there is only one"},` +
		`"operations":{"type":"array","minItems":1,"maxItems":32,"items":{"type":"object","properties":{` +
		`"id":{"type":"string","pattern":"^[A-Za-z][A-Za-z0-9_-]*$","maxLength":64},` +
		`"action":{"type":"string"},` +
		`"input":{"type":"object"},` +
		`"dependsOn":{"type":"array","items":{"type":"string"}}},` +
		`"required":["id","action"],"additionalProperties":false}}},` +
		`"required":["operations"],"additionalProperties":false}`)
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolWebAgentsBatch,
		Description: desc,
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in batchIn) (*mcp.CallToolResult, any, error) {
		page := in.Site
		if page == "" {
			if len(pages) != 1 {
				return nil, nil, fmt.Errorf("site is required: one of %s", strings.Join(pages, ", "))
			}
			page = pages[0]
		}
		if !slices.Contains(pages, page) {
			return nil, nil, fmt.Errorf("unknown site %q: one of %s", truncate(page, 200), strings.Join(pages, ", "))
		}
		return st.run(ctx, req, page, in.Operations), nil, nil
	})
}

func (st *Sites) addStatus(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolWebAgentsStatus,
		Description: "Report each configured WebAgents site: whether its manifest was found and valid (and why not), its endpoint, and the tools made from its actions.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ hubEmptyIn) (*mcp.CallToolResult, siteStatusOut, error) {
		return nil, siteStatusOut{Sites: st.statuses}, nil
	})
}

type siteStatusOut struct {
	Sites []SiteStatus `json:"sites"`
}

// run runs ops on page and makes the tool result.
func (st *Sites) run(ctx context.Context, req *mcp.CallToolRequest, page string, ops []webagents.Operation) *mcp.CallToolResult {
	progress := newProgress(ctx, req)
	progress(fmt.Sprintf("running %d operation(s) on %s", len(ops), page))
	res, err := st.opts.Client.Run(ctx, page, ops, st.runOptions())
	if err != nil {
		var consent *webagents.ConsentError
		if errors.As(err, &consent) {
			flag := st.opts.WritesFlag
			if consent.Effect == webagents.EffectIrreversible {
				flag = st.opts.IrreversibleFlag
			}
			err = fmt.Errorf("refused before sending: action %q is %s; the server was started without %s, which allows it",
				consent.Action, consent.Effect, flag)
		}
	}
	var text string
	if res != nil && res.Response != nil {
		raw, merr := json.Marshal(res.Response)
		if merr == nil {
			text = string(raw)
		}
	}
	progress("done")
	if err != nil {
		if text == "" {
			text = err.Error()
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// newProgress returns a function that sends a progress notification for req
// when the client asked for progress (else it does nothing).
func newProgress(ctx context.Context, req *mcp.CallToolRequest) func(msg string) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(string) {}
	}
	var n float64
	return func(msg string) {
		n++
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
