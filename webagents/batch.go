package webagents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// Batch is a batch request: the operations an agent submits in one POST.
type Batch struct {
	Version    string      `json:"version"`
	Operations []Operation `json:"operations"`
	// Pacing is the client echoing the manifest's pacing. A server ignores
	// anything looser than its own configuration.
	Pacing *Pacing `json:"pacing,omitempty"`

	// refTrees are the inputs with references that DecodeBatch decoded
	// (to check them), kept so that NewPlan does not decode them again;
	// NewPlan uses one only while the operation's Input is still the
	// bytes it was decoded from.
	refTrees []decodedInput
}

// decodedInput is an input's raw bytes and its decoded tree.
type decodedInput struct {
	raw  json.RawMessage
	tree any
}

// refTree returns the tree DecodeBatch decoded for operation i's input, or
// nil when there is none or the input changed since.
func (b *Batch) refTree(i int) any {
	if i >= len(b.refTrees) || b.refTrees[i].tree == nil || !bytes.Equal(b.refTrees[i].raw, b.Operations[i].Input) {
		return nil
	}
	return b.refTrees[i].tree
}

// Operation is one operation of a batch.
type Operation struct {
	// ID names the operation in dependsOn, $ref and the response
	// (^[A-Za-z][A-Za-z0-9_-]*$, ≤ 64 chars, unique in the batch).
	ID string `json:"id"`
	// Action is the published action to run.
	Action string `json:"action"`
	// Input is a JSON object; nil means {}. Objects whose only key is
	// "$ref" are references to other operations' results.
	Input json.RawMessage `json:"input,omitempty"`
	// DependsOn lists operations that must finish first.
	DependsOn []string `json:"dependsOn,omitempty"`
}

var opIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func validOpID(id string) bool {
	return id != "" && len(id) <= MaxOperationIDChars && opIDPattern.MatchString(id)
}

// wireBatch and wireOperation mirror the JSON so that missing members,
// nulls and wrong types are told apart.
type wireBatch struct {
	Version    *string          `json:"version"`
	Operations *[]wireOperation `json:"operations"`
	Pacing     *wirePacing      `json:"pacing"`
}

type wireOperation struct {
	ID        *string         `json:"id"`
	Action    *string         `json:"action"`
	Name      *string         `json:"name"`
	Input     json.RawMessage `json:"input"`
	DependsOn *[]string       `json:"dependsOn"`
}

type wirePacing struct {
	MinIntervalMs  json.RawMessage `json:"minIntervalMs"`
	MaxConcurrency json.RawMessage `json:"maxConcurrency"`
}

// DecodeBatch decodes and checks a batch request body: strict JSON (no
// duplicate or case-variant keys at any depth), version "0.1", 1..32
// operations with valid unique ids, an action (or its alias "name"; both
// must agree when given), an object input ({} when absent), string
// dependsOn entries without repeats, and string-valued references.
// Publication, scope, graph and schema rules need the manifest and are
// checked by [NewPlan].
//
// Errors are *[Error] values with status 400 and the most specific code.
func DecodeBatch(body []byte) (*Batch, error) {
	var w wireBatch
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return nil, decodeError(err)
	}
	if w.Version == nil {
		return nil, errorf(CodeInvalidRequest, `The batch needs "version": "0.1".`)
	}
	if *w.Version != Version {
		return nil, errorf(CodeUnsupportedVersion, `Only version "0.1" is supported.`)
	}
	if w.Operations == nil || len(*w.Operations) == 0 {
		return nil, errorf(CodeInvalidRequest, "The batch needs at least one operation.")
	}
	ops := *w.Operations
	if len(ops) > MaxOperationsLimit {
		return nil, errorf(CodeTooManyOperations, fmt.Sprintf("A batch holds at most %d operations.", MaxOperationsLimit))
	}
	b := &Batch{Version: Version, Operations: make([]Operation, len(ops))}
	if w.Pacing != nil {
		p, err := w.Pacing.pacing()
		if err != nil {
			return nil, err
		}
		b.Pacing = p
	}
	for i := range ops {
		tree, err := ops[i].decode(&b.Operations[i], b.Operations[:i])
		if err != nil {
			return nil, err
		}
		if tree != nil {
			if b.refTrees == nil {
				b.refTrees = make([]decodedInput, len(ops))
			}
			b.refTrees[i] = decodedInput{raw: b.Operations[i].Input, tree: tree}
		}
	}
	return b, nil
}

func decodeError(err error) *Error {
	var ke *strictjson.KeyError
	switch {
	case errors.As(err, &ke):
		return errorf(CodeInvalidRequest, "The batch has a duplicate or case-variant key.")
	case errors.Is(err, errEmptyBody):
		return errorf(CodeInvalidRequest, "The body is empty.")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errorf(CodeInvalidRequest, "The batch member "+safeField(te.Field)+" has the wrong type.")
	}
	return errorf(CodeInvalidRequest, "The body is not valid JSON.")
}

var errEmptyBody = errors.New("empty body")

// safeField keeps a Go field path from a type error short and free of payload.
func safeField(f string) string {
	if len(f) > 64 {
		f = f[:64]
	}
	return fmt.Sprintf("%q", f)
}

// pacing reads the client's echo of the manifest's pacing. The server
// ignores anything looser than its own configuration, so out-of-range
// values are not errors: a negative interval or a concurrency outside
// 1..32 is ignored, an interval above 2,000 ms is capped, null is absent.
// Only values that are not integers are refused.
func (p *wirePacing) pacing() (*Pacing, error) {
	out := &Pacing{}
	bad := errorf(CodeInvalidRequest, "The batch pacing must hold integers.")
	if p.MinIntervalMs != nil && string(p.MinIntervalMs) != "null" {
		n, ok := jsonInteger(p.MinIntervalMs)
		if !ok {
			return nil, bad
		}
		out.MinIntervalMs = int(min(max(n, 0), MaxMinIntervalMs))
	}
	if p.MaxConcurrency != nil && string(p.MaxConcurrency) != "null" {
		n, ok := jsonInteger(p.MaxConcurrency)
		if !ok {
			return nil, bad
		}
		if n >= 1 && n <= MaxOperationsLimit {
			out.MaxConcurrency = int(n)
		}
	}
	return out, nil
}

// jsonInteger parses a JSON number literal with an integral value (4, 4.0,
// 1e3); strings, null and fractions are refused. Magnitudes beyond ±1e15
// are clamped, which no pacing value reaches.
func jsonInteger(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if f != math.Trunc(f) || math.IsNaN(f) {
		return 0, false
	}
	return min(max(f, -1e15), 1e15), true
}

func (w *wireOperation) decode(op *Operation, earlier []Operation) (tree any, err error) {
	if w.ID == nil || !validOpID(*w.ID) {
		return nil, errorf(CodeInvalidRequest, "Each operation needs an id matching ^[A-Za-z][A-Za-z0-9_-]*$ (at most 64 characters).")
	}
	op.ID = *w.ID
	for i := range earlier {
		if earlier[i].ID == op.ID {
			return nil, opErrorf(CodeInvalidRequest, op.ID, "Operation ids must be unique.")
		}
	}
	switch {
	case w.Action != nil && w.Name != nil && *w.Action != *w.Name:
		return nil, opErrorf(CodeInvalidRequest, op.ID, `"action" and "name" disagree.`)
	case w.Action != nil:
		op.Action = *w.Action
	case w.Name != nil:
		op.Action = *w.Name
	default:
		return nil, opErrorf(CodeInvalidRequest, op.ID, "The operation needs an action.")
	}
	input := bytes.TrimSpace(w.Input)
	switch {
	case len(input) == 0:
		op.Input = json.RawMessage("{}")
	case input[0] != '{':
		return nil, opErrorf(CodeInvalidRequest, op.ID, "The input must be a JSON object.")
	default:
		if len(input) > MaxInputChars && utf8.RuneCount(input) > MaxInputChars {
			return nil, opErrorf(CodePayloadTooLarge, op.ID, fmt.Sprintf("An input is at most %d characters.", MaxInputChars))
		}
		op.Input = json.RawMessage(input)
		if mayHaveRefs(input) {
			t, msg := checkRefValues(input)
			if msg != "" {
				return nil, opErrorf(CodeInvalidRequest, op.ID, msg)
			}
			tree = t
		}
	}
	if w.DependsOn != nil {
		deps := *w.DependsOn
		for i, d := range deps {
			for _, e := range deps[:i] {
				if d == e {
					return nil, opErrorf(CodeInvalidRequest, op.ID, "dependsOn repeats an id.")
				}
			}
		}
		op.DependsOn = deps
	}
	return tree, nil
}

func opErrorf(code Code, op, msg string) *Error {
	e := errorf(code, msg)
	e.Operation = op
	return e
}

// mayHaveRefs is a cheap test that a raw input cannot hold a "$ref" key:
// no literal "$ref" and no \u escape that could spell one.
func mayHaveRefs(input []byte) bool {
	return bytes.Contains(input, []byte(`$ref"`)) || bytes.Contains(input, []byte(`\u`))
}

// checkRefValues refuses an input holding a reference whose value is not a
// string: it returns the agent-facing message, or "" and the decoded input
// when the input is fine.
func checkRefValues(input []byte) (any, string) {
	tree, err := decodeTree(input)
	if err != nil {
		return nil, "The input is not valid JSON."
	}
	bad := ""
	walkRefs(tree, func(ref any) {
		if _, ok := ref.(string); !ok && bad == "" {
			bad = `A "$ref" must be a string.`
		}
	})
	if bad != "" {
		return nil, bad
	}
	return tree, ""
}

// walkRefs calls fn with the value of every reference object in v.
func walkRefs(v any, fn func(ref any)) {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"]; ok && len(t) == 1 {
			fn(ref)
			return
		}
		for _, e := range t {
			walkRefs(e, fn)
		}
	case []any:
		for _, e := range t {
			walkRefs(e, fn)
		}
	}
}
