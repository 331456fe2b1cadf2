package webagents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Effect says what an action does to the site's state.
type Effect string

// The effects an action may declare.
const (
	EffectRead         Effect = "read"         // no side effects; the default
	EffectWrite        Effect = "write"        // changes state; runs in list order
	EffectIrreversible Effect = "irreversible" // changes state and cannot be undone
)

// Pacing is how fast the operations of one batch may start.
type Pacing struct {
	// MinIntervalMs is the least time in milliseconds between the starts of
	// two operations of one batch (0..2000; default 0).
	MinIntervalMs int `json:"minIntervalMs"`
	// MaxConcurrency is how many operations may run at once
	// (1..maxOperations; default min(maxOperations, 4), 1 when not parallel).
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
}

// Workflow describes a site's batch endpoint.
type Workflow struct {
	// Endpoint is where batches are POSTed; servers publish an absolute path
	// such as "/api/agent/workflow".
	Endpoint string `json:"endpoint"`
	// MaxOperations is the most operations a batch may hold (1..32).
	MaxOperations int `json:"maxOperations,omitempty"`
	// Parallel allows independent operations to run concurrently.
	Parallel bool `json:"parallel"`
	// References allows {"$ref": ...} in inputs.
	References bool `json:"references"`
	// Pacing is the server's pacing.
	Pacing Pacing `json:"pacing"`
}

// Action is one published action.
type Action struct {
	// Name is the action's key in the manifest's actions object.
	Name string `json:"-"`
	// Description is shown to models as untrusted data (≤ 500 chars).
	Description string `json:"description,omitempty"`
	// Effect is read, write or irreversible.
	Effect Effect `json:"effect,omitempty"`
	// InputSchema is the JSON Schema inputs are validated against; nil
	// means any object.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema documents the result; nil means unspecified.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// PathPrefixes are the page paths the action is relevant for.
	PathPrefixes []string `json:"pathPrefixes,omitempty"`

	input *compiledSchema // compiled InputSchema, nil when absent
}

// Manifest is a parsed, validated WebAgents manifest with every default
// applied. Obtain one from [ParseManifest] or [ParseDocument]; a Manifest built
// in Go states every field (the zero values of Parallel and References are
// false) and is validated when given to [NewHandler].
//
// A Manifest is immutable once parsed and safe for concurrent use.
type Manifest struct {
	Version  string             `json:"version"`
	Workflow Workflow           `json:"workflow"`
	Actions  map[string]*Action `json:"actions"`

	// Warnings lists what the checker reports without rejecting the
	// manifest: unknown fields, a numeric version, a non-absolute-path
	// endpoint, extra fenced blocks.
	Warnings []Problem `json:"-"`

	names         []string // sorted action names
	maxSchemaCost int64    // the ParseOptions.MaxSchemaCost it was parsed with
}

// ParseOptions configures [ParseManifest] and [ParseDocument]. The zero value
// (or nil) accepts the first fenced block of a markdown document and skips
// the same-origin check of the endpoint.
type ParseOptions struct {
	// BaseURL is the URL of the page the manifest is for (or just its
	// origin). When set, the endpoint must resolve against it to an http(s)
	// URL of the same origin.
	BaseURL string
	// Strict is the checker's reading (and NewHandler's): it requires
	// exactly one webagents fenced block in a markdown document, and
	// refuses what the originating client refuses or browsers read
	// differently from the text: a backslash in the endpoint or a path
	// prefix, and a document, endpoint, description, path prefix or schema
	// (as JSON.stringify writes it) longer in UTF-16 code units than its
	// limit. Otherwise the first block is used, the others and such
	// readings are reported in Warnings, and the manifest is read as the
	// notes and the originating client read it.
	Strict bool
	// MaxSchemaCost is the most an inputSchema or outputSchema may cost to
	// validate with (see [DefaultMaxSchemaCost], the default when 0). A
	// schema over it makes the manifest invalid with a "schema too complex"
	// problem at the schema's path.
	MaxSchemaCost int64
}

// ParseDocument parses a discovery document: raw JSON (trimmed text starting
// with "{") or markdown holding a ```webagents or ```webagents-json fenced
// block. Prose is discarded.
//
// It returns [ErrDocumentTooLarge] for a document over [MaxDocumentChars]
// code points (with Strict, one over as many UTF-16 code units is invalid),
// [ErrNoManifest] for a document with neither (such as the unrelated
// heading-based webagents.md format), and a *[ValidationError] listing every
// problem of an invalid manifest.
func ParseDocument(doc []byte, opts *ParseOptions) (*Manifest, error) {
	if opts == nil {
		opts = &ParseOptions{}
	}
	raw, warnings, err := extractManifest(doc, opts.Strict)
	if err != nil {
		return nil, err
	}
	return parseManifest(raw, opts, warnings)
}

// extractManifest returns the manifest JSON of a discovery document.
func extractManifest(doc []byte, strict bool) (raw []byte, warnings []Problem, err error) {
	if warnings, err = documentSize(doc, strict); err != nil {
		return nil, nil, err
	}
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf")))
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed, warnings, nil
	}
	blocks, unterminated := fencedBlocks(doc)
	switch {
	case len(blocks) == 0 && unterminated:
		return nil, nil, &ValidationError{Problems: []Problem{{Path: "document", Message: "webagents fenced block is not closed"}}}
	case len(blocks) == 0:
		return nil, nil, ErrNoManifest
	case len(blocks) > 1 || unterminated:
		n := len(blocks)
		if unterminated {
			n++
		}
		msg := fmt.Sprintf("document holds %d webagents fenced blocks; exactly one is allowed", n)
		if strict {
			return nil, nil, &ValidationError{Problems: []Problem{{Path: "document", Message: msg}}}
		}
		warnings = append(warnings, Problem{Path: "document", Message: msg + "; the first is used"})
	}
	// A manifest other clients cannot read, or read differently, must not
	// validate here: it would publish actions no agent of theirs sees.
	if ref, ok := referenceBlock(doc); !ok || !bytes.Equal(ref, jsTrim(blocks[0])) {
		msg := "other WebAgents clients read this document differently: they take the text from the first " +
			"```webagents (backticks, anywhere) to the next ``` (anywhere, even inside a string); " +
			"use one ```webagents block, before any other that mentions it, with no ``` in its content"
		if !ok && bytes.Contains(doc, []byte("~~~")) {
			msg = "a ~~~webagents fence is not read by other WebAgents clients; fence the manifest with ```webagents"
		}
		return nil, nil, &ValidationError{Problems: []Problem{{Path: "document", Message: msg}}}
	}
	return blocks[0], warnings, nil
}

// ParseManifest parses and validates a manifest given as JSON. Duplicate and
// case-variant keys are refused. It returns a *[ValidationError] listing every
// problem found.
func ParseManifest(data []byte, opts *ParseOptions) (*Manifest, error) {
	if opts == nil {
		opts = &ParseOptions{}
	}
	warnings, err := documentSize(data, opts.Strict)
	if err != nil {
		return nil, err
	}
	return parseManifest(data, opts, warnings)
}

// documentSize checks the length of a discovery document: over
// MaxDocumentChars code points it is [ErrDocumentTooLarge]; over as many
// UTF-16 code units, which the originating client (JavaScript) counts and
// refuses past that, it is invalid when strict and a warning otherwise.
func documentSize(doc []byte, strict bool) ([]Problem, error) {
	if len(doc) > maxUTF8Bytes(MaxDocumentChars) || utf8.RuneCount(doc) > MaxDocumentChars {
		return nil, ErrDocumentTooLarge
	}
	if n := utf16Len(string(doc)); n > MaxDocumentChars {
		p := Problem{Path: "document", Message: utf16Message(n, MaxDocumentChars, "")}
		if strict {
			return nil, &ValidationError{Problems: []Problem{p}}
		}
		return []Problem{p}, nil
	}
	return nil, nil
}

// utf16Message says that a string (or, with what, its serialization) is n
// UTF-16 code units long, over limit.
func utf16Message(n, limit int, what string) string {
	return fmt.Sprintf("is %d UTF-16 code units long%s; the originating client (JavaScript) counts them and refuses more than %d",
		n, what, limit)
}

func parseManifest(data []byte, opts *ParseOptions, warnings []Problem) (*Manifest, error) {
	// Duplicate keys and invalid UTF-8 are refused everywhere; keys that
	// differ only in case only among the manifest's own fields (below), as
	// a schema's "properties" may name both "id" and "ID".
	if err := strictjson.CheckDuplicates(data); err != nil {
		return nil, &ValidationError{Problems: []Problem{{Path: "$", Message: jsonProblem(err)}}}
	}
	tree, err := decodeTree(data)
	if err != nil {
		return nil, &ValidationError{Problems: []Problem{{Path: "$", Message: "not JSON"}}}
	}
	// The schema validator cannot read every number JSON can write (see
	// maxNumberExponent): refuse those before it sees them.
	if p := hugeNumber(tree, "$"); p != nil {
		return nil, &ValidationError{Problems: []Problem{*p}}
	}
	v := &validator{warnings: warnings, strict: opts.Strict}
	v.caseVariantFields(tree)
	if err := manifestSchema().Validate(tree); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			v.schemaProblems(ve)
		} else {
			v.problem("$", "does not validate")
		}
	}
	m := v.build(tree, opts)
	if len(v.problems) > 0 {
		// The schema validator's order is not stable; report by path.
		slices.SortStableFunc(v.problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
		return nil, &ValidationError{Problems: v.problems}
	}
	m.Warnings = v.warnings
	m.maxSchemaCost = opts.MaxSchemaCost
	return m, nil
}

// jsonProblem describes a JSON syntax or strictness error without quoting
// the document.
func jsonProblem(err error) string {
	var ke *strictjson.KeyError
	if errors.As(err, &ke) {
		return ke.Error()
	}
	var se *strictjson.SyntaxError
	if errors.As(err, &se) {
		return "malformed JSON at byte " + strconv.Itoa(se.Offset) + ": " + se.Msg
	}
	return "malformed JSON"
}

// decodeTree decodes one JSON value keeping numbers exact, as JSON Schema
// validation needs. A complete document takes fastTree's path, which
// decodes it alike; anything else is left to encoding/json.
func decodeTree(data []byte) (any, error) {
	if v, ok := fastTree(data); ok {
		return v, nil
	}
	return decodeTreeSlow(data)
}

// decodeTreeSlow is decodeTree by encoding/json alone.
func decodeTreeSlow(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type validator struct {
	problems []Problem
	warnings []Problem
	strict   bool // ParseOptions.Strict: see divergent
}

func (v *validator) problem(path, msg string) { v.problems = append(v.problems, Problem{path, msg}) }
func (v *validator) warning(path, msg string) { v.warnings = append(v.warnings, Problem{path, msg}) }
func (v *validator) addProblem(p Problem)     { v.problems = append(v.problems, p) }
func (v *validator) schemaProblems(ve *jsonschema.ValidationError) {
	if len(ve.Causes) == 0 {
		v.addProblem(Problem{Path: pointerToPath(ve.InstanceLocation), Message: ve.Message})
		return
	}
	for _, c := range ve.Causes {
		v.schemaProblems(c)
	}
}

// pointerToPath turns a JSON pointer into a JSONPath-like "$.a.b[0]['c.d']".
func pointerToPath(ptr string) string {
	var b strings.Builder
	b.WriteString("$")
	if ptr == "" {
		return b.String()
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		// jsonschema percent-encodes instance locations.
		if u, err := url.PathUnescape(seg); err == nil {
			seg = u
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		appendPathSegment(&b, seg)
	}
	return b.String()
}

func appendPathSegment(b *strings.Builder, seg string) {
	switch {
	case seg != "" && isDigits(seg):
		b.WriteString("[" + seg + "]")
	case isIdentifier(seg):
		b.WriteString("." + seg)
	default:
		b.WriteString("[" + strconv.Quote(seg) + "]")
	}
}

func joinPath(base string, keys ...string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, k := range keys {
		appendPathSegment(&b, k)
	}
	return b.String()
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		letter := c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

var (
	knownTop      = []string{"version", "workflow", "actions"}
	knownWorkflow = []string{"endpoint", "maxOperations", "parallel", "references", "pacing"}
	knownPacing   = []string{"minIntervalMs", "maxConcurrency"}
	knownAction   = []string{"description", "effect", "inputSchema", "outputSchema", "pathPrefixes"}
)

// caseVariantFields refuses keys that differ only in case among the
// manifest's own fields (the top level, workflow, pacing and each action),
// where encoding/json and a JavaScript client would read different members,
// and among action names, which a model could confuse. Keys inside schemas
// are data and may differ by case.
func (v *validator) caseVariantFields(tree any) {
	top, _ := tree.(map[string]any)
	v.caseVariants("$", top)
	wf, _ := top["workflow"].(map[string]any)
	v.caseVariants("$.workflow", wf)
	pacing, _ := wf["pacing"].(map[string]any)
	v.caseVariants("$.workflow.pacing", pacing)
	actions, _ := top["actions"].(map[string]any)
	v.caseVariants("$.actions", actions)
	for _, name := range slices.Sorted(maps.Keys(actions)) {
		a, _ := actions[name].(map[string]any)
		v.caseVariants(joinPath("$.actions", name), a)
	}
}

func (v *validator) caseVariants(path string, obj map[string]any) {
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		folded := strings.ToLower(k)
		if prev, ok := seen[folded]; ok {
			v.problem(joinPath(path, k), fmt.Sprintf("key differs only in case from %q", truncate(prev, 64)))
			continue
		}
		seen[folded] = k
	}
}

func (v *validator) unknownFields(path string, obj map[string]any, known []string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.Contains(known, k) {
			v.warning(joinPath(path, k), "unknown field (ignored)")
		}
	}
}

// build turns a decoded manifest into a [Manifest], checking the rules JSON
// Schema cannot express. It tolerates a tree that failed the schema, so that
// every problem is reported in one pass.
func (v *validator) build(tree any, opts *ParseOptions) *Manifest {
	m := &Manifest{Version: Version, Actions: map[string]*Action{}}
	top, _ := tree.(map[string]any)
	if top == nil {
		return m
	}
	v.unknownFields("$", top, knownTop)
	if n, ok := top["version"].(json.Number); ok && n.String() != "" {
		v.warning("$.version", `version should be the string "0.1", not a number`)
	}
	wf, _ := top["workflow"].(map[string]any)
	if wf != nil {
		v.unknownFields("$.workflow", wf, knownWorkflow)
	}
	w := &m.Workflow
	w.Endpoint, _ = wf["endpoint"].(string)
	w.MaxOperations = intOr(wf["maxOperations"], DefaultMaxOperations)
	w.Parallel = boolOr(wf["parallel"], true)
	w.References = boolOr(wf["references"], true)
	pacing, _ := wf["pacing"].(map[string]any)
	if pacing != nil {
		v.unknownFields("$.workflow.pacing", pacing, knownPacing)
	}
	w.Pacing.MinIntervalMs = intOr(pacing["minIntervalMs"], 0)
	defaultConc := min(w.MaxOperations, DefaultMaxConcurrency)
	if !w.Parallel {
		defaultConc = 1
	}
	w.Pacing.MaxConcurrency = intOr(pacing["maxConcurrency"], defaultConc)
	if _, given := pacing["maxConcurrency"]; given {
		if w.Pacing.MaxConcurrency > w.MaxOperations {
			v.problem("$.workflow.pacing.maxConcurrency", fmt.Sprintf("must be <= maxOperations (%d)", w.MaxOperations))
		}
		if !w.Parallel && w.Pacing.MaxConcurrency != 1 {
			v.problem("$.workflow.pacing.maxConcurrency", "must be 1 when parallel is false")
		}
	}
	if w.Endpoint != "" {
		if len(jsTrim([]byte(w.Endpoint))) == 0 {
			v.problem("$.workflow.endpoint", "is only white space; other clients trim it and refuse it as empty")
		} else {
			v.checkEndpoint(w.Endpoint, opts.BaseURL)
		}
		v.agreement("$.workflow.endpoint", w.Endpoint, MaxEndpointChars)
	}

	actions, _ := top["actions"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(actions)) {
		path := joinPath("$.actions", name)
		obj, ok := actions[name].(map[string]any)
		if !ok {
			continue // reported by the schema
		}
		v.unknownFields(path, obj, knownAction)
		a := &Action{Name: name, Effect: EffectRead, PathPrefixes: []string{"/"}}
		a.Description, _ = obj["description"].(string)
		v.agreement(path+".description", a.Description, MaxDescriptionChars)
		if e, ok := obj["effect"].(string); ok {
			a.Effect = Effect(e)
		}
		if list, ok := obj["pathPrefixes"].([]any); ok && len(list) > 0 {
			a.PathPrefixes = make([]string, 0, len(list))
			for i, p := range list {
				s, _ := p.(string)
				a.PathPrefixes = append(a.PathPrefixes, s)
				if strings.Contains(s, `\`) {
					v.divergent(fmt.Sprintf("%s.pathPrefixes[%d]", path, i),
						`has a backslash; a browser's page paths never do (it reads "\" as "/"), so it matches no page`)
				}
				v.agreement(fmt.Sprintf("%s.pathPrefixes[%d]", path, i), s, MaxPathPrefixChars)
			}
		}
		if s, ok := obj["inputSchema"].(map[string]any); ok {
			a.InputSchema, a.input = v.compileSchema(path+".inputSchema", s, opts.MaxSchemaCost)
		}
		if s, ok := obj["outputSchema"].(map[string]any); ok {
			a.OutputSchema, _ = v.compileSchema(path+".outputSchema", s, opts.MaxSchemaCost)
		}
		m.Actions[name] = a
	}
	m.names = slices.Sorted(maps.Keys(m.Actions))
	return m
}

// agreement reports where the originating client (JavaScript) reads a
// string differently: it counts UTF-16 code units where the limits count
// code points, and refuses past the limit (see divergent); and it trims
// white space (a warning: it accepts the string).
func (v *validator) agreement(path, s string, limit int) {
	if n := utf16Len(s); n > limit && utf8.RuneCountInString(s) <= limit {
		v.divergent(path, utf16Message(n, limit, ""))
	}
	if s != "" && len(jsTrim([]byte(s))) != len(s) {
		v.warning(path, "has leading or trailing white space, which other clients trim")
	}
}

func intOr(v any, def int) int {
	n, ok := v.(json.Number)
	if !ok {
		return def
	}
	f, err := n.Float64()
	if err != nil || f != float64(int(f)) {
		return def
	}
	return int(f)
}

func boolOr(v any, def bool) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	return def
}

func (v *validator) checkEndpoint(endpoint, base string) {
	const path = "$.workflow.endpoint"
	if read := browserSlashes(endpoint); read != endpoint {
		v.divergent(path, `has a backslash, which browsers read as "/" (so "/\host" names another host); write "/"`)
		endpoint = read
	}
	ref, err := url.Parse(endpoint)
	if err != nil {
		v.problem(path, "is not a URL")
		return
	}
	if !strings.HasPrefix(endpoint, "/") || strings.HasPrefix(endpoint, "//") {
		v.warning(path, `should be an absolute path such as "/api/agent/workflow", which resolves the same under every reading`)
	}
	if ref.Fragment != "" || strings.Contains(endpoint, "#") {
		v.warning(path, "has a fragment, which is not sent")
	}
	if base == "" {
		if ref.IsAbs() && ref.Scheme != "http" && ref.Scheme != "https" {
			v.problem(path, "must be an http or https URL")
		}
		return
	}
	baseURL, err := url.Parse(base)
	if err != nil || (baseURL.Scheme != "http" && baseURL.Scheme != "https") || baseURL.Host == "" {
		v.problem(path, "cannot be resolved: the base URL is not an http(s) URL")
		return
	}
	resolved := baseURL.ResolveReference(ref)
	if resolved.Scheme != "http" && resolved.Scheme != "https" {
		v.problem(path, "must resolve to an http or https URL")
		return
	}
	if originOf(resolved) != originOf(baseURL) {
		v.problem(path, "must resolve to the page's origin "+originOf(baseURL))
	}
}

// browserSlashes reads a URL reference as a browser's (WHATWG) URL parser
// does against an http(s) base: a backslash before the query or fragment is
// a slash, so "/\host/x" is the network path "//host/x".
func browserSlashes(ref string) string {
	end := strings.IndexAny(ref, "?#")
	if end < 0 {
		end = len(ref)
	}
	if !strings.Contains(ref[:end], `\`) {
		return ref
	}
	return strings.ReplaceAll(ref[:end], `\`, "/") + ref[end:]
}

// divergent reports what the originating client refuses or reads
// differently from the text: a problem for the checker, the strict parse
// and NewHandler (a site must not publish it), a warning for the client,
// which reads it as the originating client does.
func (v *validator) divergent(path, msg string) {
	if v.strict {
		v.problem(path, msg)
	} else {
		v.warning(path, msg)
	}
}

// originOf is the ASCII serialization of u's origin: scheme://host[:port],
// lower case, default port omitted.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// marshalCompact serializes v without HTML escaping.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (v *validator) compileSchema(path string, s map[string]any, maxCost int64) (json.RawMessage, *compiledSchema) {
	raw, err := marshalCompact(s)
	if err != nil {
		v.problem(path, "cannot be serialized")
		return nil, nil
	}
	if n := utf8.RuneCount(raw); n > MaxSchemaChars {
		v.problem(path, fmt.Sprintf("is %d characters serialized; the limit is %d", n, MaxSchemaChars))
		return raw, nil
	}
	if n := jsJSONLength(s); n > MaxSchemaChars {
		v.divergent(path, utf16Message(n, MaxSchemaChars, " as JSON.stringify writes it"))
	}
	if maxCost <= 0 {
		maxCost = DefaultMaxSchemaCost
	}
	compiled, err := compileUserSchema(raw, maxCost)
	var tooComplex *SchemaComplexityError
	if errors.As(err, &tooComplex) {
		v.problem(path, tooComplex.Error())
		return raw, nil
	}
	if err != nil {
		v.problem(path, "does not compile as JSON Schema: "+schemaErrorMessage(err))
		return raw, nil
	}
	return raw, compiled
}

// Action returns the named action, or nil.
func (m *Manifest) Action(name string) *Action { return m.Actions[name] }

// ActionsFor returns the actions in scope for a page path, sorted by name.
// pathPrefixes is a relevance filter, not authorization: a prefix p (its
// trailing "/" stripped) matches path x when p is "/", x == p, or x starts
// with p + "/". Matching is case-sensitive on the normalized path.
func (m *Manifest) ActionsFor(path string) []*Action {
	path = normalizePath(path)
	var out []*Action
	for _, name := range m.sortedNames() {
		if a := m.Actions[name]; a.InScope(path) {
			out = append(out, a)
		}
	}
	return out
}

func (m *Manifest) sortedNames() []string {
	if len(m.names) != len(m.Actions) {
		return slices.Sorted(maps.Keys(m.Actions))
	}
	return m.names
}

// InScope reports whether the action is relevant for the (normalized) page path.
func (a *Action) InScope(path string) bool {
	for _, p := range a.PathPrefixes {
		if prefixMatches(p, path) {
			return true
		}
	}
	return false
}

func prefixMatches(prefix, path string) bool {
	p := strings.TrimRight(prefix, "/")
	if p == "" {
		return true // "/" matches everything
	}
	return path == p || strings.HasPrefix(path, p+"/")
}

// normalizePath resolves dot segments the way a browser's URL parser does,
// keeping the path otherwise as given.
func normalizePath(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !strings.Contains(p, ".") {
		return p
	}
	u := (&url.URL{Path: "/"}).ResolveReference(&url.URL{Path: p})
	return u.Path
}

// ModelView is the model-facing view of a manifest: what a model may be
// shown, marked as untrusted data. It has no endpoint and no pathPrefixes.
type ModelView struct {
	Trust    string                 `json:"trust"`
	Version  string                 `json:"version"`
	Workflow ModelWorkflow          `json:"workflow"`
	Actions  map[string]ModelAction `json:"actions"`
}

// ModelWorkflow is the part of the workflow a model plans with.
type ModelWorkflow struct {
	MaxOperations int    `json:"maxOperations"`
	Parallel      bool   `json:"parallel"`
	References    bool   `json:"references"`
	Pacing        Pacing `json:"pacing"`
}

// ModelAction is an action as a model sees it.
type ModelAction struct {
	Description  string          `json:"description,omitempty"`
	Effect       Effect          `json:"effect,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ModelView returns the model-facing view of the actions in scope for a page
// path, with trust set to "untrusted_external_data".
func (m *Manifest) ModelView(path string) *ModelView {
	mv := &ModelView{
		Trust:   TrustUntrusted,
		Version: Version,
		Workflow: ModelWorkflow{
			MaxOperations: m.Workflow.MaxOperations,
			Parallel:      m.Workflow.Parallel,
			References:    m.Workflow.References,
			Pacing:        m.Workflow.Pacing,
		},
		Actions: map[string]ModelAction{},
	}
	for _, a := range m.ActionsFor(path) {
		mv.Actions[a.Name] = ModelAction{a.Description, a.Effect, a.InputSchema, a.OutputSchema}
	}
	return mv
}

// JSONDocument renders the manifest as served at /.well-known/webagents.json.
func (m *Manifest) JSONDocument() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("webagents: render manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// MarkdownDocument renders the manifest as served at /webagents.md: a short
// prose introduction and the manifest in one ```webagents fenced block.
func (m *Manifest) MarkdownDocument() ([]byte, error) {
	js, err := m.JSONDocument()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString("# WebAgents\n\nThis site publishes actions for browser agents (WebAgents " + Version +
		"). The manifest is the fenced block below; the same manifest is served at " + WellKnownPath + ".\n\n")
	buf.WriteString("```webagents\n")
	// A backtick can only be inside a JSON string, where \u0060 means the
	// same: escaped, no ``` in a description can end the block early for a
	// client that looks for the next ``` anywhere.
	buf.Write(bytes.ReplaceAll(js, []byte("`"), []byte(`\u0060`)))
	buf.WriteString("```\n")
	return buf.Bytes(), nil
}

// revalidate checks a [Manifest] that may have been built in Go by rendering
// and parsing it, which also compiles its schemas.
func (m *Manifest) revalidate(base string) (*Manifest, error) {
	if m == nil {
		return nil, errors.New("webagents: no manifest")
	}
	raw, err := m.JSONDocument()
	if err != nil {
		return nil, err
	}
	// The schema cost limit is the one m was parsed with: a site that
	// raised it serves the manifest it parsed.
	return ParseManifest(raw, &ParseOptions{BaseURL: base, Strict: true, MaxSchemaCost: m.maxSchemaCost})
}
