package agentbridge_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Go blocks of every Markdown file of the repository (README.md,
// CONTRIBUTING.md, docs/*.md, examples/**/README.md) are copies of Example
// functions, which go test compiles and runs, so a snippet cannot drift
// from the API. Each ```go block has a marker on the line right before it
// naming what it copies:
//
//	<!-- example: ./agentproto ExampleDial -->
//
// names the Example function ExampleDial in a _test.go file of the
// agentproto folder (the path is relative to the repository's root,
// whichever file the block is in): the block must be that function's body,
// one tab of indentation removed, without its trailing "// Output:"
// comment. A marker may instead name a whole .go file
// (<!-- example: ./examples/x/main.go -->), which the block must then copy
// in full.
//
// An Example without an "// Output:" comment is compiled but not run,
// which suits a snippet that takes over stdio or needs a real socket. A
// snippet that needs a *testing.T (test helpers) may copy a Test function
// instead.
//
// After an API change, go test -run TestMarkdownGoBlocks -update-docs .
// copies every marked Example into its block again; review the diff.
func TestMarkdownGoBlocks(t *testing.T) {
	files := markdownFiles(t, ".")
	require.Contains(t, files, "README.md")
	for _, name := range files {
		md, err := os.ReadFile(name)
		require.NoError(t, err)
		if *updateDocs {
			if updated := updateGoBlocks(md, "."); string(updated) != string(md) {
				require.NoError(t, os.WriteFile(name, updated, 0o644))
				t.Logf("%s: Go blocks copied from their Examples again", name)
				md = updated
			}
		}
		blocks, problems := checkGoBlocks(name, md, ".")
		for _, p := range problems {
			t.Errorf("%s", p)
		}
		if len(problems) > 0 {
			t.Logf("%s has %d Go blocks; each needs a marker on the line before it, such as\n"+
				"\t<!-- example: ./agentproto ExampleDial -->\n"+
				"naming the Example function (or whole .go file) the block copies", name, blocks)
		}
	}
}

// maxREADMELines is how long README.md may grow: a newcomer reads it in
// five minutes, and the rest lives in the package docs, docs/,
// CONTRIBUTING.md and CHANGELOG.md.
const maxREADMELines = 250

func TestREADMELength(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Count(string(readme), "\n")
	if !strings.HasSuffix(string(readme), "\n") {
		lines++
	}
	assert.LessOrEqual(t, lines, maxREADMELines,
		"README.md has %d lines; move detail to the package docs or docs/ (CONTRIBUTING.md, Documentation)", lines)
}

// TestMarkdownLinks: every relative link of every Markdown file names a
// file or folder that exists, and a #fragment on a link to a Markdown file
// names one of its headings.
func TestMarkdownLinks(t *testing.T) {
	for _, name := range markdownFiles(t, ".") {
		md, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, p := range checkLinks(name, md) {
			t.Errorf("%s", p)
		}
	}
}

// markdownFiles returns the Markdown files under root, as slash paths
// relative to it, leaving out hidden folders, testdata and node_modules
// (installed packages' own files).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	paths, err := repoFiles(root, ".md")
	require.NoError(t, err)
	var files []string
	for _, path := range paths {
		files = append(files, filepath.ToSlash(mustRel(root, path)))
	}
	return files
}

// repoFiles returns the paths of the files under root whose names end in
// suffix, leaving out hidden folders, testdata and node_modules.
func repoFiles(root, suffix string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, suffix) {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// mdLink matches an inline link or image, [text](target) or
// [text](target "title"), and a reference definition, [label]: target.
var (
	mdLink    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	mdRefDef  = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	codeSpan  = regexp.MustCompile("`+[^`]*`+")
	hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// checkLinks returns one message per relative link of the Markdown file
// name (a path relative to the current folder) that names nothing, outside
// code blocks and code spans.
func checkLinks(name string, md []byte) []string {
	var problems []string
	inFence := false
	for i, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		l = codeSpan.ReplaceAllString(l, "")
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		if m := mdRefDef.FindStringSubmatch(l); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if hasScheme.MatchString(target) {
				continue // https:, mailto:
			}
			if p := checkLink(name, target); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", name, i+1, target, p))
			}
		}
	}
	return problems
}

// checkLink says what is wrong with one relative link of file name, or "".
func checkLink(name, target string) string {
	path, fragment, _ := strings.Cut(target, "#")
	path, _, _ = strings.Cut(path, "?")
	file := name
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path, which works on no renderer but GitHub's; make it relative"
		}
		file = filepath.ToSlash(filepath.Join(filepath.Dir(name), filepath.FromSlash(path)))
		if _, err := os.Stat(file); err != nil {
			return fmt.Sprintf("%s does not exist", file)
		}
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(headingAnchors(data), fragment) {
		return fmt.Sprintf("%s has no heading with the anchor #%s", file, fragment)
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation but hyphens and underscores
// dropped, spaces as hyphens, and "-1", "-2", … on repeats.
func headingAnchors(md []byte) []string {
	var anchors []string
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors = append(anchors, a)
	}
	return anchors
}

// exampleMarker is the comment that names a block's source.
var exampleMarker = regexp.MustCompile(`^<!--\s*example:\s*(\S+)(?:\s+(\w+))?\s*-->\s*$`)

// looksLikeGo spots Go in an unlabelled block, which would escape the check.
var looksLikeGo = regexp.MustCompile(`(?m)(:=|^\s*func\s|^package\s|^import\s)`)

var updateDocs = flag.Bool("update-docs", false, "copy each marked Example into its Markdown Go block again")

// updateGoBlocks returns md with the text of every marked Go block
// replaced by the source its marker names; blocks whose source cannot be
// found are left as they are, for the check to report.
func updateGoBlocks(md []byte, root string) []byte {
	lines := strings.Split(string(md), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l)
		info := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		if !strings.HasPrefix(l, "```") || (info != "go" && info != "golang") || i == 0 {
			if strings.HasPrefix(l, "```") { // skip any other block whole
				for i++; i < len(lines); i++ {
					out = append(out, lines[i])
					if strings.TrimSpace(lines[i]) == "```" {
						break
					}
				}
			}
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		m := exampleMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
		want := ""
		if m != nil {
			want, _, _ = exampleSource(root, m[1], m[2])
		}
		if want == "" {
			out = append(out, lines[i+1:end]...)
		} else {
			out = append(out, strings.Split(strings.TrimSuffix(want, "\n"), "\n")...)
		}
		if end < len(lines) {
			out = append(out, lines[end])
		}
		i = end
	}
	return []byte(strings.Join(out, "\n"))
}

// fence is one fenced block of a Markdown file.
type fence struct {
	line    int    // 1-based line of the opening fence
	info    string // the info string: "go", "" …
	heading string // the section it is in
	marker  string // the line right before the fence
	text    string // the content, with a final newline
}

// fences returns the fenced blocks of the Markdown file name, and an error
// for one left open.
func fences(name string, md []byte) ([]fence, error) {
	lines := strings.Split(string(md), "\n")
	var (
		out     []fence
		heading string
		open    *fence
		body    strings.Builder
	)
	for i, l := range lines {
		if open != nil {
			if strings.TrimSpace(l) == "```" {
				open.text = body.String()
				out = append(out, *open)
				open = nil
				continue
			}
			body.WriteString(l)
			body.WriteByte('\n')
			continue
		}
		if strings.HasPrefix(l, "#") {
			heading = l
		}
		if strings.HasPrefix(l, "```") {
			open = &fence{line: i + 1, info: strings.TrimSpace(l[3:]), heading: heading}
			if i > 0 {
				open.marker = lines[i-1]
			}
			body.Reset()
		}
	}
	if open != nil {
		return out, fmt.Errorf("%s:%d: the block opened here is never closed", name, open.line)
	}
	return out, nil
}

// checkGoBlocks checks every Go block of the Markdown file name (its text
// md) against the source its marker names, root being the repository's
// folder. It returns the number of Go blocks and one message per problem.
func checkGoBlocks(name string, md []byte, root string) (int, []string) {
	fs, err := fences(name, md)
	if err != nil {
		return 0, []string{err.Error()}
	}
	var problems []string
	goBlocks := 0
	for _, f := range fs {
		isGo := f.info == "go" || f.info == "golang"
		where := fmt.Sprintf("%s:%d (%s)", name, f.line, f.heading)
		if isGo {
			where = fmt.Sprintf("%s:%d (%s, Go block %d)", name, f.line, f.heading, goBlocks+1)
		}
		m := exampleMarker.FindStringSubmatch(strings.TrimSpace(f.marker))
		switch {
		case !isGo && m != nil:
			problems = append(problems, fmt.Sprintf("%s: an example marker sits on a block that is not ```go", where))
			continue
		case !isGo && f.info == "" && looksLikeGo.MatchString(f.text):
			problems = append(problems, fmt.Sprintf("%s: looks like Go but is not labelled ```go, so no test checks it", where))
			continue
		case !isGo:
			continue
		}
		goBlocks++
		if m == nil {
			marker := "<!-- example: ./PKG ExampleName -->"
			if found := findCopies(root, f.text); len(found) > 0 {
				marker = "<!-- example: " + found[0] + " -->" + " (the block is a copy of it)"
			}
			problems = append(problems, fmt.Sprintf("%s: no marker names the Example it copies; put\n"+
				"\t%s\non the line before it (the block starts %q)", where, marker, firstLine(f.text)))
			continue
		}
		want, src, err := exampleSource(root, m[1], m[2])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		if d := firstDifference(f.text, want); d != "" {
			problems = append(problems, fmt.Sprintf("%s drifted from %s: %s\n"+
				"copy the body of %s into %s again, or change the Example", where, src, d, src, name))
		}
	}
	return goBlocks, problems
}

// exampleSource returns the text a block marked "path name" must equal,
// and where it comes from.
func exampleSource(root, path, name string) (text, src string, err error) {
	if filepath.IsAbs(path) || strings.Contains(path, "..") {
		return "", "", fmt.Errorf("marker path %q must be relative to the module and stay inside it", path)
	}
	full := filepath.Join(root, filepath.FromSlash(path))
	if name == "" {
		if !strings.HasSuffix(path, ".go") {
			return "", "", fmt.Errorf("marker %q names neither an Example function nor a .go file", path)
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return "", "", fmt.Errorf("marker: %w", err)
		}
		return string(data), path, nil
	}
	if !strings.HasPrefix(name, "Example") && !strings.HasPrefix(name, "Test") {
		return "", "", fmt.Errorf("marker names %s, which is not an Example (or Test) function", name)
	}
	files, err := filepath.Glob(filepath.Join(full, "*_test.go"))
	if err != nil || len(files) == 0 {
		return "", "", fmt.Errorf("marker: no _test.go files in %s", path)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", "", err
		}
		f, err := parser.ParseFile(fset, file, data, parser.ParseComments)
		if err != nil {
			return "", "", err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name || fn.Body == nil {
				continue
			}
			pos := fset.Position(fn.Pos())
			src := fmt.Sprintf("%s (%s:%d)", name, filepath.ToSlash(mustRel(root, file)), pos.Line)
			return exampleBody(fset, f, fn, data), src, nil
		}
	}
	return "", "", fmt.Errorf("marker: no function %s in %s's tests", name, path)
}

// findCopies returns the markers ("./pkg ExampleName") of the Example and
// Test functions under root whose body is text, to suggest for a block
// without a marker.
func findCopies(root, text string) []string {
	var found []string
	paths, _ := repoFiles(root, "_test.go")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, data, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil ||
				!strings.HasPrefix(fn.Name.Name, "Example") && !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if firstDifference(text, exampleBody(fset, f, fn, data)) == "" {
				dir := "./" + filepath.ToSlash(mustRel(root, filepath.Dir(path)))
				if dir == "./." {
					dir = "."
				}
				found = append(found, dir+" "+fn.Name.Name)
			}
		}
	}
	return found
}

// exampleBody returns fn's body as a README block shows it: the lines
// between the braces, one tab of indentation removed, without the trailing
// output comment.
func exampleBody(fset *token.FileSet, f *ast.File, fn *ast.FuncDecl, src []byte) string {
	start := fset.Position(fn.Body.Lbrace).Offset + 1
	end := fset.Position(fn.Body.Rbrace).Offset
	for _, cg := range f.Comments {
		if cg.Pos() < fn.Body.Lbrace || cg.End() > fn.Body.Rbrace {
			continue
		}
		text := strings.TrimSpace(cg.Text())
		if strings.HasPrefix(text, "Output:") || strings.HasPrefix(text, "Unordered output:") {
			end = fset.Position(cg.Pos()).Offset
			break
		}
	}
	body := string(src[start:end])
	body = strings.TrimLeft(body, " \t")
	body = strings.TrimPrefix(body, "\n")
	var out strings.Builder
	for l := range strings.Lines(body) {
		out.WriteString(strings.TrimPrefix(l, "\t"))
	}
	return strings.TrimRight(out.String(), " \t\n") + "\n"
}

// firstDifference describes where got and want first differ, or returns
// "" when they are the same but for trailing space.
func firstDifference(got, want string) string {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	w := strings.Split(strings.TrimRight(want, "\n"), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = strings.TrimRight(g[i], " \t")
		}
		if i < len(w) {
			wl = strings.TrimRight(w[i], " \t")
		}
		if gl == wl && i < len(g) && i < len(w) {
			continue
		}
		switch {
		case i >= len(g):
			return fmt.Sprintf("block line %d: the block stops; the Example goes on with %q", i+1, wl)
		case i >= len(w):
			return fmt.Sprintf("block line %d: the block has %q; the Example has ended", i+1, gl)
		}
		return fmt.Sprintf("block line %d:\n\tblock:   %q\n\tExample: %q", i+1, gl, wl)
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func mustRel(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// TestCheckGoBlocks shows that the Markdown check catches each kind of
// drift, with a message that says which block and where.
func TestCheckGoBlocks(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "pkg", "example_test.go"), "package pkg_test\n\n"+
		"import \"fmt\"\n\n"+
		"func ExampleHello() {\n\tmsg := \"hi\"\n\tif msg != \"\" {\n\t\tfmt.Println(msg)\n\t}\n\t// Output: hi\n}\n\n"+
		"func helper() {}\n")
	writeFile(t, filepath.Join(root, "pkg", "hello_test.go"), "package pkg_test\n\nimport \"testing\"\n\n"+
		"func TestHello(t *testing.T) {\n\tt.Log(\"hi\")\n}\n")
	writeFile(t, filepath.Join(root, "cmd", "main.go"), "package main\n\nfunc main() {}\n")
	body := "msg := \"hi\"\nif msg != \"\" {\n\tfmt.Println(msg)\n}\n"
	block := func(marker, info, text string) string {
		return "## Section\n\nSome prose.\n" + marker + "\n```" + info + "\n" + text + "```\n"
	}

	tests := []struct {
		name   string
		readme string
		want   []string // substrings of the one problem; none means no problem
	}{
		{"copy of the body", block("<!-- example: ./pkg ExampleHello -->", "go", body), nil},
		{"whole file", block("<!-- example: ./cmd/main.go -->", "go", "package main\n\nfunc main() {}\n"), nil},
		{"not Go", block("", "", "go test ./...\n"), nil},
		{"drifted line", block("<!-- example: ./pkg ExampleHello -->", "go", strings.Replace(body, `"hi"`, `"hello"`, 1)),
			[]string{"README.md:5 (## Section, Go block 1) drifted from ExampleHello (pkg/example_test.go:5)", "block line 1", `msg := \"hello\"`}},
		{"README shorter", block("<!-- example: ./pkg ExampleHello -->", "go", "msg := \"hi\"\n"),
			[]string{"drifted", "block line 2: the block stops"}},
		{"README longer", block("<!-- example: ./pkg ExampleHello -->", "go", body+"extra()\n"),
			[]string{"drifted", "block line 5", "extra()"}},
		{"no marker", block("", "go", "other()\n"), []string{"README.md:5 (## Section, Go block 1): no marker",
			"<!-- example: ./PKG ExampleName -->", `"other()"`}},
		{"no marker on a copy", block("", "go", body), []string{"no marker", "<!-- example: ./pkg ExampleHello --> (the block is a copy of it)"}},
		{"missing function", block("<!-- example: ./pkg ExampleBye -->", "go", body), []string{"no function ExampleBye"}},
		{"not an Example", block("<!-- example: ./pkg helper -->", "go", body), []string{"not an Example (or Test) function"}},
		{"a Test function", block("<!-- example: ./pkg TestHello -->", "go", "t.Log(\"hi\")\n"), nil},
		{"missing folder", block("<!-- example: ./nope ExampleHello -->", "go", body), []string{"no _test.go files in ./nope"}},
		{"outside the module", block("<!-- example: ../pkg ExampleHello -->", "go", body), []string{"stay inside"}},
		{"unlabelled Go", block("", "", "x := 1\n"), []string{"looks like Go but is not labelled"}},
		{"marker on a shell block", block("<!-- example: ./pkg ExampleHello -->", "sh", "ls\n"), []string{"not ```go"}},
		{"unclosed", "```go\nx := 1\n", []string{"README.md:1: the block opened here is never closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := checkGoBlocks("README.md", []byte(tt.readme), root)
			if len(tt.want) == 0 {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			for _, w := range tt.want {
				assert.Contains(t, problems[0], w)
			}
		})
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// TestCheckLinks shows that the link check catches a missing file, a
// missing heading and an absolute path, and lets through what resolves,
// remote links, and links inside code.
func TestCheckLinks(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "docs/guide.md", "# Guide\n\n## Running on a fleet (`redisstore`)\n\n## Notes\n\n## Notes\n")
	writeFile(t, "examples/x/main.go", "package main\n")

	tests := []struct {
		name string
		md   string
		want string // a substring of the one problem; "" means no problem
	}{
		{"file", "See [the guide](docs/guide.md).", ""},
		{"folder", "See [x](examples/x).", ""},
		{"heading", "See [fleet](docs/guide.md#running-on-a-fleet-redisstore).", ""},
		{"repeated heading", "See [notes](docs/guide.md#notes-1).", ""},
		{"own heading", "# Top\n\nSee [top](#top).", ""},
		{"remote", "See [Go](https://go.dev/x) and [mail](mailto:a@b.example).", ""},
		{"in a code span", "Write `[x](missing.md)` for a link.", ""},
		{"in a code block", "```\n[x](missing.md)\n```", ""},
		{"title", `See [the guide](docs/guide.md "The guide").`, ""},
		{"image", "![logo](docs/logo.png)", "docs/logo.png does not exist"},
		{"missing file", "See [it](docs/nope.md).", "README.md:1: link \"docs/nope.md\": docs/nope.md does not exist"},
		{"missing heading", "See [it](docs/guide.md#releasing).", "docs/guide.md has no heading with the anchor #releasing"},
		{"missing own heading", "# Top\n\nSee [it](#bottom).", "README.md has no heading with the anchor #bottom"},
		{"reference definition", "See [it][g].\n\n[g]: docs/gone.md", "docs/gone.md does not exist"},
		{"absolute", "See [it](/docs/guide.md).", "absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, "README.md", tt.md)
			problems := checkLinks("README.md", []byte(tt.md))
			if tt.want == "" {
				assert.Empty(t, problems)
				return
			}
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0], tt.want)
		})
	}

	// A link from a file in a folder resolves from that folder.
	assert.Empty(t, checkLinks("docs/guide.md", []byte("[up](../examples/x/main.go), [self](guide.md#notes)")))
	assert.NotEmpty(t, checkLinks("docs/guide.md", []byte("[wrong](examples/x/main.go)")))
}
