package webagents

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed schema/manifest.schema.json
var manifestSchemaJSON []byte

const manifestSchemaURL = "https://agentbridge.invalid/webagents/manifest-0.1.schema.json"

// userSchemaURL is the base URL a published schema is compiled under. The
// .invalid top-level domain can never resolve, and the loader refuses every
// URL anyway.
const userSchemaURL = "https://agentbridge.invalid/webagents/action-schema.json"

// errExternalRef is returned by the schema loader for every URL: published
// schemas may only reference themselves and the built-in drafts.
var errExternalRef = errors.New("remote and file references are refused")

func refuseLoad(string) (io.ReadCloser, error) { return nil, errExternalRef }

func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = refuseLoad
	return c
}

var manifestSchema = sync.OnceValue(func() *jsonschema.Schema {
	c := newCompiler()
	if err := c.AddResource(manifestSchemaURL, bytes.NewReader(manifestSchemaJSON)); err != nil {
		panic("webagents: embedded manifest schema: " + err.Error())
	}
	return c.MustCompile(manifestSchemaURL)
})

// compiledSchema is a published schema ready to validate with: compiled,
// and with its cost known so that every validation is bounded.
type compiledSchema struct {
	schema *jsonschema.Schema
	cost   *schemaCost
}

// SchemaComplexityError is the problem of a published schema whose cost
// exceeds the limit (see [DefaultMaxSchemaCost]). It matches
// errors.Is(err, [ErrSchemaTooComplex]).
type SchemaComplexityError struct {
	Cost  int64 // the schema's cost, or more than Limit when saturated
	Limit int64
}

func (e *SchemaComplexityError) Error() string {
	if e.Cost >= costCap {
		return fmt.Sprintf("schema too complex: its validation cost is beyond measure; the limit is %d", e.Limit)
	}
	return fmt.Sprintf("schema too complex: its validation cost is %d; the limit is %d", e.Cost, e.Limit)
}

// Unwrap returns [ErrSchemaTooComplex].
func (e *SchemaComplexityError) Unwrap() error { return ErrSchemaTooComplex }

// ErrSchemaTooComplex is matched by a [*SchemaComplexityError].
var ErrSchemaTooComplex = errors.New("webagents: schema too complex")

// compileUserSchema compiles a published inputSchema or outputSchema and
// measures its cost, refusing one over maxCost. Only the document itself
// and the built-in meta-schemas can be referenced.
func compileUserSchema(raw []byte, maxCost int64) (cs *compiledSchema, err error) {
	defer func() {
		// The compiler is third-party code fed hostile input; a panic in it
		// must not take down the process.
		if r := recover(); r != nil {
			cs, err = nil, fmt.Errorf("schema compiler failed")
		}
	}()
	c := newCompiler()
	if err := c.AddResource(userSchemaURL, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	s, err := c.Compile(userSchemaURL)
	if err != nil {
		return nil, err
	}
	cost, err := newSchemaCost(s)
	if err != nil {
		return nil, err
	}
	if got := cost.at(SchemaCostDepth); got > maxCost {
		return nil, &SchemaComplexityError{Cost: got, Limit: maxCost}
	}
	return &compiledSchema{schema: s, cost: cost}, nil
}

// schemaErrorMessage renders a compile error without the internal base URL.
func schemaErrorMessage(err error) string {
	msg := err.Error()
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		msg = se.Err.Error()
		if errors.Is(se.Err, errExternalRef) || strings.Contains(msg, errExternalRef.Error()) {
			return errExternalRef.Error()
		}
	}
	if strings.Contains(msg, errExternalRef.Error()) {
		return errExternalRef.Error()
	}
	msg = strings.ReplaceAll(msg, userSchemaURL, "")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// validateInput checks an input against a compiled schema and returns the
// problems found, each with its JSON path.
// The work is bounded before it starts: the schema's cost at the input's
// depth times the input's number of values must be at most
// [MaxValidationSteps].
func validateInput(s *compiledSchema, input json.RawMessage) []Problem {
	tree, err := decodeTree(input)
	if err != nil {
		return []Problem{{Path: "$", Message: "not JSON"}}
	}
	values, depth := treeSize(tree, 0)
	if cost := s.cost.at(depth); cost >= costCap || cost*int64(values) > MaxValidationSteps {
		return []Problem{{Path: "$", Message: fmt.Sprintf(
			"input is too large or deep to validate against this schema (%d values, %d deep; the validation budget is %d steps)",
			values, depth, MaxValidationSteps)}}
	}
	err = s.schema.Validate(tree)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "$", Message: "does not validate"}}
	}
	v := &validator{}
	v.schemaProblems(ve)
	return v.problems
}

// treeSize returns the number of values in a decoded JSON value and its
// nesting depth (0 for a scalar).
func treeSize(v any, depth int) (values, maxDepth int) {
	values, maxDepth = 1, depth
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			n, d := treeSize(c, depth+1)
			values, maxDepth = values+n, max(maxDepth, d)
		}
	case []any:
		for _, c := range v {
			n, d := treeSize(c, depth+1)
			values, maxDepth = values+n, max(maxDepth, d)
		}
	}
	return values, maxDepth
}
