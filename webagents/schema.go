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

// compileUserSchema compiles a published inputSchema or outputSchema. Only
// the document itself and the built-in meta-schemas can be referenced.
func compileUserSchema(raw []byte) (s *jsonschema.Schema, err error) {
	defer func() {
		// The compiler is third-party code fed hostile input; a panic in it
		// must not take down the process.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("schema compiler failed")
		}
	}()
	c := newCompiler()
	if err := c.AddResource(userSchemaURL, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(userSchemaURL)
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
func validateInput(s *jsonschema.Schema, input json.RawMessage) []Problem {
	tree, err := decodeTree(input)
	if err != nil {
		return []Problem{{Path: "$", Message: "not JSON"}}
	}
	err = s.Validate(tree)
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
