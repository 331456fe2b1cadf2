package webagents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	// bytes it was decoded from (raw is a copy of them, so that changes
	// made in place are seen too).
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

// validOpID reports whether id matches ^[A-Za-z][A-Za-z0-9_-]*$ and has
// at most MaxOperationIDChars characters.
func validOpID(id string) bool {
	if id == "" || len(id) > MaxOperationIDChars || !isASCIILetter(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !isASCIILetter(c) && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

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
// must agree when given), an object input ({} when absent), at most
// [MaxOperationsLimit] string dependsOn entries without repeats, and
// string-valued references.
// Publication, scope, graph and schema rules need the manifest and are
// checked by [NewPlan].
//
// Errors are *[Error] values with status 400 and the most specific code.
func DecodeBatch(body []byte) (*Batch, error) {
	// The strict scan refuses what strictjson.Unmarshal into a wireBatch
	// would; the walk then decodes as encoding/json would, without
	// reflection.
	if err := strictjson.CheckInto(body, batchShape); err != nil {
		return nil, decodeError(err)
	}
	var w batchWalk
	w.walk(body)
	if w.typeErr != nil {
		if *w.typeErr == "" {
			return nil, errorf(CodeInvalidRequest, "The body is not valid JSON.")
		}
		return nil, errorf(CodeInvalidRequest, "The batch member "+safeField(*w.typeErr)+" has the wrong type.")
	}
	if !w.hasVersion {
		return nil, errorf(CodeInvalidRequest, `The batch needs "version": "0.1".`)
	}
	if w.version != Version {
		return nil, errorf(CodeUnsupportedVersion, `Only version "0.1" is supported.`)
	}
	if !w.hasOps || w.nOps == 0 {
		return nil, errorf(CodeInvalidRequest, "The batch needs at least one operation.")
	}
	if w.nOps > MaxOperationsLimit {
		return nil, errorf(CodeTooManyOperations, fmt.Sprintf("A batch holds at most %d operations.", MaxOperationsLimit))
	}
	ops := w.ops[:w.nOps]
	b := &Batch{Version: Version, Operations: make([]Operation, len(ops))}
	if w.hasPacing {
		p, err := (&wirePacing{MinIntervalMs: w.minInterval, MaxConcurrency: w.maxConcurrency}).pacing()
		if err != nil {
			return nil, err
		}
		b.Pacing = p
	}
	// The inputs are copied (the batch must not alias body) into one
	// allocation, as the dependsOn lists share one.
	var inputs, copies []byte
	if w.inputBytes > 0 {
		inputs = make([]byte, 0, w.inputBytes)
	}
	for i := range ops {
		if ops[i].input != nil {
			at := len(inputs)
			inputs = append(inputs, ops[i].input...)
			ops[i].input = inputs[at:len(inputs):len(inputs)]
		}
		tree, err := ops[i].decode(&b.Operations[i], b.Operations[:i], w.deps)
		if err != nil {
			return nil, err
		}
		if tree != nil {
			if b.refTrees == nil {
				b.refTrees = make([]decodedInput, len(ops))
				copies = make([]byte, 0, w.inputBytes)
			}
			// raw is a copy: the caller may change Input's bytes in place.
			at := len(copies)
			copies = append(copies, b.Operations[i].Input...)
			b.refTrees[i] = decodedInput{raw: copies[at:len(copies):len(copies)], tree: tree}
		}
	}
	return b, nil
}

// batchShape is the type the strict scan of a batch checks keys against.
var batchShape = new(wireBatch)

// batchWalk is a batch body decoded as encoding/json decodes it into a
// wireBatch: members present or absent (null is absent), and the first
// member of the wrong type. Its slices alias the body.
type batchWalk struct {
	typeErr *string // Field of the first type error, as encoding/json names it

	version    string
	hasVersion bool
	hasOps     bool
	nOps       int // operations in the body; ops holds the first MaxOperationsLimit
	ops        [MaxOperationsLimit]opWalk
	inputBytes int      // total length of the inputs of ops
	deps       []string // the dependsOn entries of all operations

	hasPacing                   bool
	minInterval, maxConcurrency []byte
}

// opWalk is one operation of a batchWalk.
type opWalk struct {
	id, action, name          string
	hasID, hasAction, hasName bool
	input                     []byte // the raw value; nil when absent
	hasDeps                   bool
	depsFrom, depsTo          int // dependsOn is batchWalk.deps[depsFrom:depsTo]
	depsLen                   int // entries in the body's dependsOn; beyond MaxOperationsLimit they are not kept
}

func (w *batchWalk) wrongType(field string) {
	if w.typeErr == nil {
		w.typeErr = &field
	}
}

// walk decodes a body that strictjson.CheckInto accepted for a wireBatch:
// valid JSON, keys of the wire types spelled exactly, no duplicate keys.
func (w *batchWalk) walk(body []byte) {
	c := cursor{data: body}
	c.space()
	switch c.data[c.pos] {
	case 'n':
		return
	case '{':
	default:
		w.wrongType("")
		return
	}
	c.object(func(key []byte) {
		switch string(key) {
		case "version":
			w.version, w.hasVersion = c.stringMember(w, "version")
		case "operations":
			switch c.data[c.pos] {
			case 'n':
				c.skip()
			case '[':
				w.hasOps = true
				c.array(func() {
					// Operations past the limit are only walked for type
					// errors: the batch is refused.
					var scratch opWalk
					op, keep := &scratch, false
					if w.nOps < len(w.ops) {
						op, keep = &w.ops[w.nOps], true
					}
					w.nOps++
					w.walkOperation(&c, op, keep)
				})
			default:
				w.wrongType("operations")
				c.skip()
			}
		case "pacing":
			switch c.data[c.pos] {
			case 'n':
				c.skip()
			case '{':
				w.hasPacing = true
				c.object(func(key []byte) {
					start := c.pos
					c.skip()
					switch string(key) {
					case "minIntervalMs":
						w.minInterval = c.data[start:c.pos]
					case "maxConcurrency":
						w.maxConcurrency = c.data[start:c.pos]
					}
				})
			default:
				w.wrongType("pacing")
				c.skip()
			}
		default:
			c.skip()
		}
	})
}

// walkOperation walks one operation; keep is false for one past the
// limit, whose dependsOn entries are not kept.
func (w *batchWalk) walkOperation(c *cursor, op *opWalk, keep bool) {
	switch c.data[c.pos] {
	case 'n':
		c.skip()
		return
	case '{':
	default:
		w.wrongType("operations")
		c.skip()
		return
	}
	c.object(func(key []byte) {
		switch string(key) {
		case "id":
			op.id, op.hasID = c.stringMember(w, "operations.id")
		case "action":
			op.action, op.hasAction = c.stringMember(w, "operations.action")
		case "name":
			op.name, op.hasName = c.stringMember(w, "operations.name")
		case "input":
			start := c.pos
			c.skip()
			op.input = c.data[start:c.pos]
			w.inputBytes += c.pos - start
		case "dependsOn":
			switch c.data[c.pos] {
			case 'n':
				c.skip()
			case '[':
				op.hasDeps = true
				op.depsFrom = len(w.deps)
				c.array(func() {
					// Entries past the most a valid list holds are only
					// counted (and checked for type): the list is refused.
					op.depsLen++
					if !keep || op.depsLen > MaxOperationsLimit {
						if c.data[c.pos] != '"' && c.data[c.pos] != 'n' {
							w.wrongType("operations.dependsOn")
						}
						c.skip()
						return
					}
					switch c.data[c.pos] {
					case '"':
						w.deps = append(w.deps, c.str())
					case 'n':
						c.skip()
						w.deps = append(w.deps, "")
					default:
						w.wrongType("operations.dependsOn")
						c.skip()
					}
				})
				op.depsTo = len(w.deps)
			default:
				w.wrongType("operations.dependsOn")
				c.skip()
			}
		default:
			c.skip()
		}
	})
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

func (w *opWalk) decode(op *Operation, earlier []Operation, deps []string) (tree any, err error) {
	if !w.hasID || !validOpID(w.id) {
		return nil, errorf(CodeInvalidRequest, "Each operation needs an id matching ^[A-Za-z][A-Za-z0-9_-]*$ (at most 64 characters).")
	}
	op.ID = w.id
	for i := range earlier {
		if earlier[i].ID == op.ID {
			return nil, opErrorf(CodeInvalidRequest, op.ID, "Operation ids must be unique.")
		}
	}
	switch {
	case w.hasAction && w.hasName && w.action != w.name:
		return nil, opErrorf(CodeInvalidRequest, op.ID, `"action" and "name" disagree.`)
	case w.hasAction:
		op.Action = w.action
	case w.hasName:
		op.Action = w.name
	default:
		return nil, opErrorf(CodeInvalidRequest, op.ID, "The operation needs an action.")
	}
	if op.Input, tree, err = operationInput(op.ID, w.input); err != nil {
		return nil, err
	}
	if w.hasDeps {
		if w.depsLen > MaxOperationsLimit {
			// Longer than a batch can be, so refused before its entries
			// are compared pairwise: a body of distinct ids is otherwise
			// quadratic work.
			return nil, opErrorf(CodeInvalidRequest, op.ID, fmt.Sprintf("dependsOn lists at most %d ids.", MaxOperationsLimit))
		}
		list := deps[w.depsFrom:w.depsTo:w.depsTo]
		if list == nil {
			list = []string{} // present but empty is not absent
		}
		for i, d := range list {
			for _, e := range list[:i] {
				if d == e {
					return nil, opErrorf(CodeInvalidRequest, op.ID, "dependsOn repeats an id.")
				}
			}
		}
		op.DependsOn = list
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
	if _, _, strs, raw := rawRefOperations(input, nil); raw {
		if !strs {
			return nil, `A "$ref" must be a string.`
		}
		return nil, "" // NewPlan reads them from the text again
	}
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

// operationInput checks an operation's input (its text trimmed, nil when
// absent): {} when absent, an object, at most MaxInputChars, with valid
// references, whose tree it returns when there are any.
func operationInput(id string, input []byte) (json.RawMessage, any, error) {
	switch {
	case len(input) == 0:
		return json.RawMessage("{}"), nil, nil
	case input[0] != '{':
		return nil, nil, opErrorf(CodeInvalidRequest, id, "The input must be a JSON object.")
	case len(input) > MaxInputChars && utf8.RuneCount(input) > MaxInputChars:
		return nil, nil, opErrorf(CodePayloadTooLarge, id, fmt.Sprintf("An input is at most %d characters.", MaxInputChars))
	case !mayHaveRefs(input):
		return json.RawMessage(input), nil, nil
	}
	tree, msg := checkRefValues(input)
	if msg != "" {
		return nil, nil, opErrorf(CodeInvalidRequest, id, msg)
	}
	return json.RawMessage(input), tree, nil
}
