package mcptools_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocQuickStart: the package doc's quick start is the body of the
// package Example, which go test compiles, so it cannot drift from the API.
func TestDocQuickStart(t *testing.T) {
	fset := token.NewFileSet()
	doc, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	const intro = "A server with the bridge's tools and one site's, over stdio:\n\n"
	text := doc.Doc.Text()
	i := strings.Index(text, intro)
	require.GreaterOrEqual(t, i, 0, "doc.go's quick start lost its introduction %q", intro)
	var block strings.Builder
	for _, line := range strings.SplitAfter(text[i+len(intro):], "\n") {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		block.WriteString(line)
	}

	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	f, err := parser.ParseFile(fset, "example_test.go", src, 0)
	require.NoError(t, err)
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example" {
			body = string(src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset])
		}
	}
	require.NotEmpty(t, body, "example_test.go has no func Example")
	assert.Equal(t, body, block.String(), "doc.go's quick start must be a copy of func Example's body")
}
