package webagents

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripFunc serves requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// markdownSite is an HTTP client for which https://shop.example serves doc
// at /webagents.md and nothing else.
func markdownSite(doc string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp := &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: r}
		if r.URL.Host == "shop.example" && r.URL.Path == MarkdownPath {
			resp.StatusCode = http.StatusOK
			resp.Header.Set("Content-Type", "text/markdown; charset=utf-8")
			resp.Body = io.NopCloser(strings.NewReader(doc))
		}
		return resp, nil
	})}
}

// TestStricterThanBetterWright: issue 24 item 5. Each row is a document
// that BetterWright's parser (src/webagents.ts, parseWebAgentsDocument, at
// commit dfb1e25, run on each document for the page
// https://shop.example/products) reads as the manifest in "betterwright",
// and that we refuse: what Discover says for that page, and why the strict
// parse (validate, Check, NewHandler) refuses it. The compatibility table
// of docs/webagents.md lists the same rows with the reasons; this test
// keeps it true.
func TestStricterThanBetterWright(t *testing.T) {
	manifest := func(actions, workflow string) string {
		return `{"version":"0.1","workflow":` + workflow + `,"actions":` + actions + `}`
	}
	const wf = `{"endpoint":"/api/agent/workflow"}`
	real := manifest(`{"cart.add":{"effect":"write","pathPrefixes":["/products"]}}`, wf)
	fenced := func(m string) string { return "# Shop\n\n```webagents\n" + m + "\n```\n" }
	tests := []struct {
		name         string
		doc          string
		betterwright string // what it reads: its endpoint and actions
		discover     string // Discover's status
		problem      string // in the error of Discover and of the strict parse
		sentinel     error  // or the error both match
		strictOnly   bool   // the problem is the strict parse's; Discover's error is ErrCrossOriginEndpoint
	}{
		{name: "four-space-indented fence", doc: "# Shop\n\n    ```webagents\n    " + real + "\n    ```\n",
			betterwright: "/api/agent/workflow, cart.add (write)", discover: "absent", sentinel: ErrNoManifest},
		{name: "closing fence on the JSON's last line", doc: "# Shop\n\n```webagents\n" + real + "```\n",
			betterwright: "/api/agent/workflow, cart.add (write)", discover: "invalid", problem: "fenced block is not closed"},
		{name: "duplicate keys", doc: fenced(manifest(`{"cart.add":{"effect":"read","effect":"write"}}`, wf)),
			betterwright: "cart.add (write: the last wins)", discover: "invalid", problem: `duplicate key: "effect"`},
		{name: "case-variant action names", doc: fenced(manifest(`{"cart.add":{"effect":"write"},"Cart.add":{}}`, wf)),
			betterwright: "cart.add (write) and Cart.add (read)", discover: "invalid", problem: "differs only in case"},
		{name: "NBSP-padded name", doc: fenced(manifest(`{"\u00a0cart.add\u00a0":{}}`, wf)),
			betterwright: "cart.add (read), trimmed", discover: "invalid", problem: "does not match pattern"},
		{name: "tab inside the endpoint", doc: fenced(manifest(`{"a":{}}`, `{"endpoint":"/api/agent\t/workflow"}`)),
			betterwright: "/api/agent/workflow (the tab dropped), a", discover: "invalid", problem: "endpoint: is not a URL"},
		{name: "padded path prefix", doc: fenced(manifest(`{"a":{"pathPrefixes":[" /products "]}}`, wf)),
			betterwright: "a, for /products (trimmed)", discover: "invalid", problem: "pathPrefixes[0]: does not match pattern"},
		{name: "pacing number JavaScript rounds to an integer", doc: fenced(manifest(`{"a":{}}`, `{"endpoint":"/wf","pacing":{"minIntervalMs":49.999999999999999}}`)),
			betterwright: "minIntervalMs 50", discover: "invalid", problem: "minIntervalMs: expected integer"},
		{name: "https:evil.example/wf", doc: fenced(manifest(`{"a":{}}`, `{"endpoint":"https:evil.example/wf"}`)),
			betterwright: "https://shop.example/evil.example/wf (on an http page: https://evil.example/wf, refused)", discover: "unsafe",
			problem: "must resolve to the page's origin", strictOnly: true},
		{name: "port 0443", doc: fenced(manifest(`{"a":{}}`, `{"endpoint":"https://shop.example:0443/wf"}`)),
			betterwright: "https://shop.example/wf (port 443, the default)", discover: "unsafe",
			problem: "must resolve to the page's origin", strictOnly: true},
		{name: "quoted example before the real block",
			doc:          "# Shop\n\nFor example:\n\n````markdown\n```webagents\n" + manifest(`{"example.only":{}}`, wf) + "\n```\n````\n\n```webagents\n" + real + "\n```\n",
			betterwright: "the example: example.only (read), not cart.add", discover: "invalid", problem: "other WebAgents clients read this document differently"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{HTTPClient: markdownSite(tt.doc)}
			d, err := c.Discover(t.Context(), "https://shop.example/products")
			d = outcome(t, d, err)
			assert.Equal(t, tt.discover, d.Status.String(), "BetterWright reads %s", tt.betterwright)
			assert.Empty(t, d.Actions, "no action is offered")

			_, strictErr := ParseDocument([]byte(tt.doc), &ParseOptions{BaseURL: "https://shop.example", Strict: true})
			switch {
			case tt.sentinel != nil:
				assert.ErrorIs(t, d.Err, tt.sentinel)
				assert.ErrorIs(t, strictErr, tt.sentinel)
			case tt.strictOnly:
				assert.ErrorIs(t, d.Err, ErrCrossOriginEndpoint)
				var ve *ValidationError
				require.ErrorAs(t, strictErr, &ve)
				assert.Contains(t, joinProblems(ve.Problems), tt.problem)
			default:
				assert.ErrorContains(t, d.Err, tt.problem)
				var ve *ValidationError
				require.ErrorAs(t, strictErr, &ve)
				assert.Contains(t, joinProblems(ve.Problems), tt.problem)
			}
		})
	}
}
