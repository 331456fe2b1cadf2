package webagents

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

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
	simple *simpleSchema // the fast path for valid inputs; nil for a schema beyond it
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
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	if p := hugeNumber(tree, "$"); p != nil {
		return nil, fmt.Errorf("%s at %s", p.Message, p.Path)
	}
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
	if got := cost.at(schemaCostDepth); got > maxCost {
		return nil, &SchemaComplexityError{Cost: got, Limit: maxCost}
	}
	return &compiledSchema{schema: s, cost: cost, simple: compileSimpleSchema(tree)}, nil
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
// depth times the input's size (see inputSize) must be at most
// maxValidationSteps, and no number may have an exponent beyond
// maxNumberExponent.
func validateInput(s *compiledSchema, input json.RawMessage) []Problem {
	if s.simple != nil && s.simple.validRaw(input, s.cost) {
		return nil
	}
	tree, err := decodeTree(input)
	if err != nil {
		return []Problem{{Path: "$", Message: "not JSON"}}
	}
	return validateTree(s, tree)
}

// validateTree is validateInput for an input decodeTree decoded (or one
// equal to what it decodes from the input's encoding); tree is only read.
func validateTree(s *compiledSchema, tree any) []Problem {
	if p := hugeNumber(tree, "$"); p != nil {
		return []Problem{*p}
	}
	size, depth := inputSize(tree, 0)
	if cost := s.cost.at(depth); cost >= costCap || cost*int64(size) > maxValidationSteps {
		return []Problem{{Path: "$", Message: fmt.Sprintf(
			"input is too large or deep to validate against this schema (size %d, %d deep; the validation budget is %d steps)",
			size, depth, maxValidationSteps)}}
	}
	if s.simple != nil && s.simple.valid(tree) {
		return nil
	}
	err := validateWithin(s, tree, s.cost.at(depth)*int64(size))
	if err == nil {
		return nil
	}
	if errors.Is(err, errValidationTimeout) {
		return []Problem{{Path: "$", Message: fmt.Sprintf(
			"validation took longer than its budget of %v", validationTimeout)}}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "$", Message: "does not validate"}}
	}
	v := &validator{}
	v.schemaProblems(ve)
	return v.problems
}

// stringBytesPerStep is the length of string (or object key) that counts
// as one more value in an input's size: a pattern or a format scans the
// whole string, at tens of nanoseconds a byte.
const stringBytesPerStep = 32

// inputSize returns the size of a decoded JSON value, the number of values
// in it with every string and key counting one more per
// stringBytesPerStep bytes, and its nesting depth (0 for a scalar).
func inputSize(v any, depth int) (size, maxDepth int) {
	size, maxDepth = 1, depth
	switch v := v.(type) {
	case string:
		size += len(v) / stringBytesPerStep
	case map[string]any:
		for k, c := range v {
			n, d := inputSize(c, depth+1)
			size, maxDepth = size+n+len(k)/stringBytesPerStep, max(maxDepth, d)
		}
	case []any:
		for _, c := range v {
			n, d := inputSize(c, depth+1)
			size, maxDepth = size+n, max(maxDepth, d)
		}
	}
	return size, maxDepth
}

// maxNumberExponent is the largest exponent, in magnitude, that a number in
// a manifest, a published schema or an input may be written with. The
// schema validator reads numbers exactly, as big rationals: 1e999999 costs
// it tens of milliseconds and megabytes, and 1e9999999 it cannot read at
// all. Such numbers are far outside what JSON parsers interoperate on
// (IEEE 754 doubles end near 1e308 and 5e-324), so they are refused with
// the problem "number out of range".
const maxNumberExponent = 1000

// hugeNumber returns a problem at the path of a number in v written with an
// exponent beyond maxNumberExponent, or nil when there is none.
func hugeNumber(v any, path string) *Problem {
	switch v := v.(type) {
	case json.Number:
		if !numberInRange(string(v)) {
			return &Problem{Path: path, Message: fmt.Sprintf(
				"number out of range: its exponent is beyond ±%d", maxNumberExponent)}
		}
	case map[string]any:
		for k, c := range v {
			if p := hugeNumber(c, joinPath(path, k)); p != nil {
				return p
			}
		}
	case []any:
		for i, c := range v {
			if p := hugeNumber(c, joinPath(path, strconv.Itoa(i))); p != nil {
				return p
			}
		}
	}
	return nil
}

// numberInRange reports whether a JSON number's exponent, if it has one, is
// at most maxNumberExponent in magnitude.
func numberInRange(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(strings.TrimLeft(n[i+1:], "+-"), "0")
	if len(exp) > 4 {
		return false
	}
	e, err := strconv.Atoi("0" + exp)
	return err == nil && e <= maxNumberExponent
}

// Validation's second guard, after the static bound (maxValidationSteps):
// a validation estimated at more than inlineValidationSteps runs on a
// goroutine of its own, and when it has not finished within
// validationTimeout the input is refused with invalid_input at once. The
// schema library cannot be interrupted, so the abandoned validation still
// runs to its end in the background (its work is bounded by the static
// budget); at most maxHeavyValidations such validations run at once,
// abandoned ones included, and a validation that waited validationTimeout
// for a turn is refused too. Both are process-wide guards of the CPU, not
// budgets a site has reason to tune: the package doc lists them.
const (
	defaultValidationTimeout = time.Second
	maxHeavyValidations      = 4
)

// inlineValidationSteps is the estimated work under which a validation runs
// on the caller's goroutine: tens of microseconds at most, where a timer
// and a goroutine would cost more than they guard.
const inlineValidationSteps = 2_000

var (
	errValidationTimeout = errors.New("webagents: validation budget exceeded")
	// validationTimeout is defaultValidationTimeout; tests shorten it.
	validationTimeout = defaultValidationTimeout
	heavyValidations  = make(chan struct{}, maxHeavyValidations)
)

// validateWithin validates tree against s, on the caller's goroutine when
// steps (the static estimate of the work) is small, else on a goroutine of
// its own under validationTimeout.
func validateWithin(s *compiledSchema, tree any, steps int64) error {
	if steps <= inlineValidationSteps {
		return validateRecovered(s, tree)
	}
	timer := time.NewTimer(validationTimeout)
	defer timer.Stop()
	select {
	case heavyValidations <- struct{}{}:
	case <-timer.C:
		return errValidationTimeout
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-heavyValidations }()
		done <- validateRecovered(s, tree)
	}()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return errValidationTimeout
	}
}

// validateRecovered runs the schema library, third-party code fed hostile
// input, so that a panic in it refuses the input instead of ending the
// process (on a goroutine of validateWithin's, nothing else would recover
// it).
func validateRecovered(s *compiledSchema, tree any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errValidationPanic
		}
	}()
	return s.schema.Validate(tree)
}

var errValidationPanic = errors.New("webagents: the schema validator failed on this input")
