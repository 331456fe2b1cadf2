package agentbridge_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamplesUseOnlyThePublicAPI: an example folder copied into another
// module must build, so no example's code imports the module's internal
// packages (STYLE.md). The demo is the exception: it is the module's own
// tour and uses the test kit.
func TestExamplesUseOnlyThePublicAPI(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == filepath.Join("examples", "demo") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/agentbridge/agentbridge/") && strings.Contains(p+"/", "/internal/") {
				t.Errorf("%s imports %s: an example uses only the public API (move what it needs into the example's folder or a public package)", path, p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 10, "the examples were read")
}
