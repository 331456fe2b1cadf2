package agentbridge_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shell commands of every Markdown file (CHANGELOG.md excepted: it is
// history) are checked without running them, in fenced blocks that are not
// Go and in code spans of the prose:
//
//   - go test, go run, go build, go vet: every package path exists,
//     relative to the folder the command runs in (the repository's root, or
//     the folder of a cd before it, "(cd mcp && go test ./...)"); every flag
//     is one go documents (go help testflag, test, build) or one the
//     packages' tests define (-update-docs); each alternative of a -run,
//     -skip, -list, -bench or -fuzz regexp matches at least one Test, Fuzz,
//     Example or Benchmark function of those packages (-fuzz: a Fuzz one).
//     A test binary that its block builds (go test -c -o X.test PKG) is
//     checked as go test PKG, with a for loop's and a line's variables
//     ($t, "$P") replaced.
//   - the example programs (every main package under examples/ and a
//     module's cmd/, run by name or by go run; any main package by go
//     run): the subcommand exists, and every -flag or --flag is one the
//     program defines, for that subcommand when the flag is a
//     subcommand's own. Both are read from the program's code (flag
//     definitions with literal or constant names; the strings its switch
//     cases compare with and its command table's name: fields), since a
//     root test cannot call into a main package.
//   - in prose, a flag alone in a code span ("flags `--addr`, `--token`")
//     is the flag of the program named before it in the paragraph, list
//     item or table row (or of go test after a go test command; in
//     mcp/README.md, of the one program under mcp/); a subcommand's usage
//     there (`snapshot [-all]`, `tasks list|get`) is that program's.
//   - scripts (.ci/run, bash .ci/platforms wine): the file exists and is
//     executable, and its first argument is one its own usage comment
//     names ("# `bash .ci/platforms wine` runs step 2 alone").
//   - environment variables (WEBOPERATOR_*, AGENTBRIDGE_*, BROWSERHUB_*,
//     BROWSERTEST_*), anywhere in the text: a Go string literal of the
//     repository is that name, as in the code that reads it.
//
// Other tools' commands (benchstat, go install, go mod, git, chromium)
// are not checked. A command this cannot read (a package in a variable,
// a test binary built elsewhere) fails the test, unless it is marked on
// the line before its block or paragraph with
//
//	<!-- unchecked: why -->
func TestMarkdownCommands(t *testing.T) {
	env := loadCommandEnv(t, ".")
	total := 0
	for _, name := range markdownFiles(t, ".") {
		if name == "CHANGELOG.md" {
			continue
		}
		md, err := os.ReadFile(name)
		require.NoError(t, err)
		cmds, problems := checkCommands(name, md, env)
		for _, p := range problems {
			t.Errorf("%s", p)
		}
		lone := 0
		for _, c := range cmds {
			if c.lone {
				lone++
			}
		}
		if len(cmds) > 0 {
			t.Logf("%s: %d commands and %d flags named on their own checked", name, len(cmds)-lone, lone)
		}
		total += len(cmds)
	}
	assert.Greater(t, total, 50, "the docs' commands were found")
}

// commandEnv is what the commands are checked against.
type commandEnv struct {
	root     string
	goFlags  map[string]bool            // go test/build flags; true: takes a value
	programs map[string]*program        // by name
	strings  map[string]bool            // every Go string literal of the repository
	funcs    map[string]map[string]bool // a folder's Test/Benchmark/Fuzz/Example functions, by folder
	tflags   map[string]map[string]bool // the flags a folder's tests define, by folder
	mu       sync.Mutex
}

// program is one example command.
type program struct {
	dir         string                     // its folder, relative to the root
	flags       map[string]bool            // the flags it defines; true: takes a value
	global      map[string]bool            // those outside any subcommand
	subFlags    map[string]map[string]bool // each subcommand's own
	subcommands map[string]bool            // words its code dispatches on ("check", "tasks start")
}

func loadCommandEnv(t *testing.T, root string) *commandEnv {
	t.Helper()
	env := &commandEnv{root: root, goFlags: goCommandFlags(t), programs: map[string]*program{},
		strings: map[string]bool{}, funcs: map[string]map[string]bool{}, tflags: map[string]map[string]bool{}}
	for _, pattern := range []string{"examples/*", "*/cmd/*"} {
		dirs, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		for _, dir := range dirs {
			p, err := readProgram(dir)
			require.NoError(t, err)
			if p != nil {
				p.dir = filepath.ToSlash(mustRel(root, dir))
				env.programs[filepath.Base(dir)] = p
			}
		}
	}
	paths, err := repoFiles(root, ".go")
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue // reported by the build
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					env.strings[s] = true
				}
			}
			return true
		})
	}
	require.NoError(t, err)
	return env
}

// goFlagLine is a flag in go help's output: "\t-bench regexp", "\t-short".
var goFlagLine = regexp.MustCompile(`^\t-([a-zA-Z][\w.]*)( \S)?`)

// goCommandFlags returns the flags go test accepts, as go help documents
// them, each with whether it takes a value.
func goCommandFlags(t *testing.T) map[string]bool {
	t.Helper()
	flags := map[string]bool{}
	for _, topic := range []string{"testflag", "test", "build"} {
		out, err := exec.Command("go", "help", topic).Output()
		require.NoError(t, err, "go help %s", topic)
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if m := goFlagLine.FindStringSubmatch(sc.Text()); m != nil {
				flags[m[1]] = flags[m[1]] || m[2] != ""
			}
		}
	}
	require.Contains(t, flags, "bench", "go help testflag lists the test flags")
	return flags
}

// flagMethods are the flag.FlagSet (and package flag) methods that define
// a flag, with whether the flag takes a value.
var flagMethods = map[string]bool{
	"Bool": false, "BoolVar": false, "BoolFunc": false,
	"String": true, "StringVar": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
	"Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "Float64": true, "Float64Var": true,
	"Duration": true, "DurationVar": true, "Func": true, "Var": true, "TextVar": true,
}

// readProgram reads the flags and subcommands of the main package in dir,
// from its code: each call of a flag-defining method with the flag's name
// as a literal (fs.String("addr", …), fs.BoolVar(&v, "all", …)), each
// string a switch case compares with, and each name: field of a command
// table. It returns nil for a folder that is no main package.
func readProgram(dir string) (*program, error) {
	src, err := parseDir(dir, false)
	if err != nil {
		return nil, err
	}
	if len(src.files) == 0 || src.files[0].Name.Name != "main" {
		return nil, nil
	}
	p := &program{flags: map[string]bool{}, global: map[string]bool{}, subFlags: map[string]map[string]bool{}, subcommands: map[string]bool{}}
	src.inspect(func(n ast.Node) {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				if s, ok := src.str(e); ok {
					p.subcommands[s] = true
				}
			}
		case *ast.KeyValueExpr:
			if s, ok := src.nameField(n); ok {
				p.subcommands[s] = true
			}
		}
	})
	// A flag belongs to the subcommand of the function that makes a
	// FlagSet named for it (flag.NewFlagSet("check", …)), or of the
	// command table entry it is defined in ({name: "snapshot", define:
	// …}); else to the whole program.
	var scopes []string
	for _, f := range src.files {
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				scopes = scopes[:len(scopes)-1]
				return true
			}
			scope := ""
			if len(scopes) > 0 {
				scope = scopes[len(scopes)-1]
			}
			switch n := n.(type) {
			case *ast.FuncDecl, *ast.FuncLit:
				if s := src.flagSetName(n); p.subcommands[s] {
					scope = s
				}
			case *ast.CompositeLit:
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if s, ok := src.nameField(kv); ok {
							scope = s
						}
					}
				}
			case *ast.CallExpr:
				into := p.global
				if scope != "" {
					if p.subFlags[scope] == nil {
						p.subFlags[scope] = map[string]bool{}
					}
					into = p.subFlags[scope]
				}
				src.flagDef(n, into)
				src.flagDef(n, p.flags)
			}
			scopes = append(scopes, scope)
			return true
		})
	}
	return p, nil
}

// nameField returns the value of a name: "…" field.
func (src *goSource) nameField(kv *ast.KeyValueExpr) (string, bool) {
	if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "name" {
		return src.str(kv.Value)
	}
	return "", false
}

// flagSetName returns the name of the FlagSet a function makes with a
// literal or constant name, or "".
func (src *goSource) flagSetName(fn ast.Node) string {
	name := ""
	ast.Inspect(fn, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && name == "" {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewFlagSet" && len(call.Args) > 0 {
				name, _ = src.str(call.Args[0])
			}
		}
		return name == ""
	})
	return name
}

// goSource is the parsed Go files of one folder.
type goSource struct {
	files  []*ast.File
	consts map[string]string // the string constants, by name
}

// parseDir parses the .go files of dir: the _test.go files if tests,
// else the others.
func parseDir(dir string, tests bool) (*goSource, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	src := &goSource{consts: map[string]string{}}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") != tests {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		src.files = append(src.files, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, v := range vs.Values {
						if s, ok := stringLit(v); ok && i < len(vs.Names) {
							src.consts[vs.Names[i].Name] = s
						}
					}
				}
			}
		}
	}
	return src, nil
}

func (src *goSource) inspect(fn func(ast.Node)) {
	for _, f := range src.files {
		ast.Inspect(f, func(n ast.Node) bool {
			fn(n)
			return true
		})
	}
}

// str returns the value of a string literal or constant.
func (src *goSource) str(e ast.Expr) (string, bool) {
	if id, ok := e.(*ast.Ident); ok {
		s, ok := src.consts[id.Name]
		return s, ok
	}
	return stringLit(e)
}

// flagDef adds the flag call defines, if it is a call of a flag-defining
// method with the flag's name as a literal or constant, to flags.
func (src *goSource) flagDef(call *ast.CallExpr, flags map[string]bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	value, ok := flagMethods[sel.Sel.Name]
	if !ok {
		return
	}
	for _, arg := range call.Args[:min(2, len(call.Args))] {
		if name, ok := src.str(arg); ok {
			flags[name] = value
			return
		}
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// testFuncs returns the functions of the _test.go files in dir (relative
// to the root), and the flags they define (go test passes the flags it
// does not know to the test binary: -update-docs).
func (env *commandEnv) testFuncs(dir string) (funcs, flags map[string]bool) {
	env.mu.Lock()
	defer env.mu.Unlock()
	if fns, ok := env.funcs[dir]; ok {
		return fns, env.tflags[dir]
	}
	funcs, flags = map[string]bool{}, map[string]bool{}
	if src, err := parseDir(filepath.Join(env.root, dir), true); err == nil {
		for _, f := range src.files {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					funcs[fn.Name.Name] = true
				}
			}
		}
		src.inspect(func(n ast.Node) {
			if call, ok := n.(*ast.CallExpr); ok {
				src.flagDef(call, flags)
			}
		})
	}
	env.funcs[dir], env.tflags[dir] = funcs, flags
	return funcs, flags
}

// shellCommand is one simple command of a Markdown file.
type shellCommand struct {
	where string   // file:line
	dir   string   // the folder it runs in, relative to the root
	words []string // the command and its arguments, environment assignments removed
	text  string   // the line it comes from
	lone  bool     // a flag named on its own in prose, checked where it was found
	// unresolved says why a command cannot be checked, for a marker to
	// say so.
	unresolved string
}

var (
	uncheckedMarker = regexp.MustCompile(`^<!--\s*unchecked:\s*\S.*-->\s*$`)
	envName         = regexp.MustCompile(`\b(?:WEBOPERATOR|AGENTBRIDGE|BROWSERHUB|BROWSERTEST)_[A-Z0-9_]*[A-Z0-9]\b`)
	envAssignment   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// checkCommands finds the commands and environment variables of the
// Markdown file name (its text md) and checks each against env. It
// returns the commands it checked and one message per problem.
func checkCommands(name string, md []byte, env *commandEnv) ([]shellCommand, []string) {
	var (
		cmds     []shellCommand
		problems []string
	)
	lines := strings.Split(string(md), "\n")
	inFence, checked := false, true
	var (
		block                   []string
		blockStart, pendingLine int
		pending                 string
		pendingChecked          bool
	)
	for i, l := range lines {
		for _, v := range envName.FindAllString(l, -1) {
			if !env.strings[v] {
				problems = append(problems, fmt.Sprintf("%s:%d: environment variable %s: no Go code of the repository names it", name, i+1, v))
			}
		}
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if !inFence {
				info := strings.TrimSpace(strings.TrimLeft(trimmed, "`"))
				inFence, block, blockStart = true, nil, i+1
				checked = info != "go" && info != "golang" && (i == 0 || !uncheckedMarker.MatchString(strings.TrimSpace(lines[i-1])))
				continue
			}
			inFence = false
			if checked {
				cmds = append(cmds, blockCommands(name, blockStart, block)...)
			}
			continue
		}
		if inFence {
			block = append(block, l)
			continue
		}
		// Prose is read a unit at a time: a paragraph, a list item or a
		// table row, in which a code span may go on to the next line.
		if pending == "" {
			pendingLine, pendingChecked = i+1, i == 0 || !uncheckedMarker.MatchString(strings.TrimSpace(lines[i-1]))
			pending = l
		} else {
			pending += "\n" + l
		}
		if i+1 < len(lines) && !startsUnit(lines[i+1]) && !singleLine.MatchString(l) {
			continue
		}
		if pendingChecked {
			cs, ps := spanCommands(name, pendingLine, pending, env)
			cmds = append(cmds, cs...)
			problems = append(problems, ps...)
		}
		pending = ""
	}
	var out []shellCommand
	for _, c := range cmds {
		if c.lone {
			out = append(out, c)
			continue
		}
		if c.unresolved != "" {
			out = append(out, c)
			problems = append(problems, fmt.Sprintf("%s: %q: %s", c.where, strings.Join(c.words, " "), c.unresolved))
			continue
		}
		if len(c.words) == 0 || !env.isCommand(c.words[0]) {
			continue
		}
		if _, isProgram := env.programs[c.words[0]]; isProgram && len(c.words) == 1 {
			continue // the program's name in prose, "`webagents`"
		}
		out = append(out, c)
		problems = append(problems, env.check(c)...)
	}
	return out, problems
}

// startsUnit says whether a line of prose starts a unit of its own (or
// ends the one before): a blank line, a list item, a table row, a
// heading, a comment, a fence.
var unitStart = regexp.MustCompile(`^\s*(?:$|[-*+] |\d+\. |\||#|<!--|` + "```" + `)`)

// loneFlag is a flag in a code span of its own: `--http ADDR`, `[-all]`
// (and not `-32602`).
var loneFlag = regexp.MustCompile(`^\[?--?[a-zA-Z]`)

// singleLine is a line that is a unit alone: a table row, a heading, a
// comment.
var singleLine = regexp.MustCompile(`^\s*(?:\||#|<!--)`)

func startsUnit(l string) bool { return unitStart.MatchString(l) }

// spanCommands returns the commands in the code spans of a unit of prose
// (its text, from line start of file name), and the problems of the flags
// it names on their own: "`agentbridge-mcp` … its flags `--http ADDR`,
// `--hub`" names the flags of the program named before them in the
// unit, or of go test after a go test command. Another program's command
// ("`chromium --user-data-dir=P`") ends that.
//
// In the README of a folder that holds one program (mcp/README.md), a
// unit starts with that program, or go test's flags ("measured with
// `-count 4`").
func spanCommands(name string, start int, prose string, env *commandEnv) ([]shellCommand, []string) {
	var (
		cmds     []shellCommand
		problems []string
		owner    *program // the program whose flags a lone flag names
		ownerIs  string
		goTest   bool
		byFolder bool // owner is the folder's program, not named in the unit
	)
	if dir := filepath.ToSlash(filepath.Dir(name)); dir != "." {
		for n, p := range env.programs {
			if strings.HasPrefix(p.dir, dir+"/") {
				if owner != nil {
					owner = nil // two programs: neither
					break
				}
				owner, ownerIs, byFolder = p, n, true
			}
		}
	}
	for _, loc := range codeSpan.FindAllStringIndex(prose, -1) {
		where := fmt.Sprintf("%s:%d", name, start+strings.Count(prose[:loc[0]], "\n"))
		text := strings.Trim(strings.ReplaceAll(prose[loc[0]:loc[1]], "\n", " "), "`")
		words, err := shellWords(text)
		if err != nil || len(words) == 0 {
			continue // prose in code, such as "don't"
		}
		cs := splitCommands(where, text, words, "")
		if len(cs) == 0 {
			continue
		}
		cmds = append(cmds, cs...)
		first := cs[0].words
		switch p, isProgram := env.programs[first[0]]; {
		case isProgram && (len(first) > 1 || owner == nil):
			// A program named alone, in passing, takes over from none.
			owner, ownerIs, goTest, byFolder = p, first[0], false, false
		case isProgram:
		case len(first) > 2 && first[0] == "go" && first[1] == "run":
			if p, ok := env.programs[filepath.Base(first[2])]; ok && path("", first[2]) == p.dir {
				owner, ownerIs, goTest, byFolder = p, filepath.Base(first[2]), false, false
			}
		case len(first) > 1 && first[0] == "go" && first[1] == "test":
			owner, goTest, byFolder = nil, true, false
		case loneFlag.MatchString(first[0]):
			flag, _, _ := strings.Cut(strings.Trim(first[0], "[]-"), "=")
			if owner != nil || goTest {
				cmds = append(cmds, shellCommand{where: where, words: first[:1], text: text, lone: true})
			}
			switch {
			case owner != nil:
				_, isGoFlag := env.goFlags[flag]
				if _, ok := owner.flags[flag]; !ok && !(byFolder && isGoFlag) {
					problems = append(problems, fmt.Sprintf("%s: %q: %s defines no flag -%s (its flags: %s)", where, text, ownerIs, flag, flagList(owner.flags)))
				}
			case goTest:
				if _, ok := env.goFlags[flag]; !ok {
					problems = append(problems, fmt.Sprintf("%s: %q: go test has no flag -%s", where, text, flag))
				}
			}
		case owner != nil && len(owner.subFlags) > 0 && isWord(first[0]) && (owner.subcommands[first[0]] || hasPrefixCommand(owner.subcommands, first[0]+" ")):
			// A subcommand's usage in a unit about its program:
			// `snapshot [-all]`, `tasks list|get`.
			cmds = append(cmds, shellCommand{where: where, words: append([]string{ownerIs}, first...), text: text})
		case len(first) > 1 && strings.HasPrefix(first[1], "-") && (owner == nil || !owner.subcommands[first[0]]):
			owner, goTest, byFolder = nil, false, false // another program's command line
		}
	}
	return cmds, problems
}

// blockCommands returns the commands of a fenced block starting at line
// start, a cd on a line of its own applying to the lines after it. It
// follows what a recipe around a test binary needs: a variable set on a
// line of its own (P='^Benchmark…$'), a for loop's variable (its first
// value), and a test binary built by go test -c -o X.test PKG in the
// block, whose runs (./X.test, or any other *.test beside it: a before
// and after pair) are checked as go test PKG with their -test.* flags.
func blockCommands(name string, start int, block []string) []shellCommand {
	var (
		cmds    []shellCommand
		dir     string
		vars    = map[string]string{}
		testPkg *shellCommand // go test -c -o X.test PKG
	)
	for j := 0; j < len(block); j++ {
		line, at := strings.TrimSpace(block[j]), start+j+1
		for strings.HasSuffix(line, `\`) && j+1 < len(block) {
			j++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(block[j])
		}
		line = strings.TrimPrefix(line, "$ ")
		words, err := shellWords(line)
		if err != nil || len(words) == 0 {
			continue
		}
		if len(words) == 1 && envAssignment.MatchString(words[0]) {
			k, v, _ := strings.Cut(words[0], "=")
			vars[k] = v
			continue
		}
		for i, w := range words {
			for k, v := range vars {
				w = strings.ReplaceAll(strings.ReplaceAll(w, "${"+k+"}", v), "$"+k, v)
			}
			words[i] = w
		}
		for _, c := range splitCommands(fmt.Sprintf("%s:%d", name, at), line, words, dir) {
			for len(c.words) > 0 && slices.Contains([]string{"do", "then", "else"}, c.words[0]) {
				c.words = c.words[1:]
			}
			switch {
			case len(c.words) == 0 || c.words[0] == "done" || c.words[0] == "fi":
				continue
			case c.words[0] == "for" && len(c.words) > 3 && c.words[2] == "in":
				vars[c.words[1]] = c.words[3]
				continue
			case len(c.words) > 2 && c.words[0] == "go" && c.words[1] == "test" && slices.Contains(c.words, "-c"):
				t := c
				testPkg = &t
			case strings.HasSuffix(filepath.Base(c.words[0]), ".test"):
				if testPkg == nil {
					c.unresolved = fmt.Sprintf("the test binary %s: no go test -c in this block says which package it is; build it here, or mark the block <!-- unchecked: why -->", c.words[0])
					break
				}
				pkg := testPkg.words[len(testPkg.words)-1]
				c.words = append([]string{"go", "test", pkg}, c.words[1:]...)
				c.dir = testPkg.dir
			}
			cmds = append(cmds, c)
		}
		if len(words) == 2 && words[0] == "cd" {
			dir = path(dir, words[1])
		}
	}
	return cmds
}

// path joins a cd's argument to the folder it runs in.
func path(dir, to string) string {
	return filepath.ToSlash(filepath.Clean(filepath.Join(dir, to)))
}

// shellOperators separate simple commands.
var shellOperators = []string{"&&", "||", ";", "|", "(", ")", "&"}

// splitCommands splits a line's words (from shellWords) at the shell's
// operators into simple commands, a cd applying to what follows it in its
// group, and drops redirections and environment assignments.
func splitCommands(where, text string, words []string, dir string) []shellCommand {
	var (
		cmds     []shellCommand
		cur      []string
		stack    []string
		brackets int // inside a usage's [optional part]
	)
	flush := func() {
		if len(cur) > 0 {
			cmds = append(cmds, shellCommand{where: where, dir: dir, words: cur, text: text})
			if cur[0] == "cd" && len(cur) == 2 {
				dir = path(dir, cur[1])
			}
		}
		cur = nil
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		brackets += strings.Count(w, "[") - strings.Count(w, "]")
		switch {
		case w == "|" && brackets > 0: // [-native-host NAME | -no-native]
		case w == "(":
			flush()
			stack = append(stack, dir)
		case w == ")":
			flush()
			if len(stack) > 0 {
				dir, stack = stack[len(stack)-1], stack[:len(stack)-1]
			}
		case slices.Contains(shellOperators, w):
			flush()
		case w == ">" || w == ">>" || w == "<" || w == "2>":
			i++ // and its file
		case strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
		case len(cur) == 0 && envAssignment.MatchString(w):
		default:
			cur = append(cur, w)
		}
	}
	flush()
	return cmds
}

// shellWords splits a shell line into words, quotes removed, with the
// operators of shellOperators as words of their own; a # starting a word
// comments out the rest.
func shellWords(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	end := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !in:
			return words, nil
		case c == '\'' || c == '"': // no escapes inside either, for a doc's commands
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unclosed quote")
			}
			cur.WriteString(line[i+1 : i+1+j])
			in, i = true, i+1+j
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == '|' && in && i+1 < len(line) && strings.IndexByte(" \t|", line[i+1]) < 0:
			cur.WriteByte(c) // get|wait: alternatives in a usage, not a pipe
		case strings.IndexByte("&|;()", c) >= 0:
			end()
			op := string(c)
			if i+1 < len(line) && (c == '&' || c == '|') && line[i+1] == c {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	end()
	return words, nil
}

// isCommand says whether a command's first word is one this check knows.
func (env *commandEnv) isCommand(w string) bool {
	_, isProgram := env.programs[w]
	return w == "go" || w == "bash" || isProgram || strings.HasPrefix(w, ".ci/") || strings.HasPrefix(w, "./.ci/")
}

// check returns the problems of one command.
func (env *commandEnv) check(c shellCommand) []string {
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %q: ", c.where, strings.Join(c.words, " "))+fmt.Sprintf(format, args...))
	}
	w := c.words
	switch {
	case w[0] == "go":
		env.checkGo(c, report)
	case w[0] == "bash" && len(w) > 1:
		env.checkScript(c.dir, w[1], w[2:], report)
	case strings.HasPrefix(w[0], ".ci/") || strings.HasPrefix(w[0], "./.ci/"):
		env.checkScript(c.dir, w[0], w[1:], report)
	default:
		env.checkProgram(w[0], env.programs[w[0]], w[1:], report)
	}
	return problems
}

// checkScript checks a script's path, mode and first argument.
func (env *commandEnv) checkScript(dir, script string, args []string, report func(string, ...any)) {
	file := filepath.Join(env.root, dir, script)
	fi, err := os.Stat(file)
	if err != nil {
		report("the script %s does not exist", path(dir, script))
		return
	}
	if fi.IsDir() {
		if len(args) > 0 {
			report("%s is a folder, not a script", path(dir, script))
		}
		return // a folder named in prose: .ci/modproxy
	}
	if fi.Mode()&0o111 == 0 {
		report("the script %s is not executable", path(dir, script))
	}
	if len(args) == 0 {
		return
	}
	text, err := os.ReadFile(file)
	if err != nil {
		report("%v", err)
		return
	}
	if !bytes.Contains(text, []byte(strings.TrimPrefix(script, "./")+" "+args[0])) {
		report("%s's usage comment names no %q", script, args[0])
	}
}

// checkGo checks go test, go run and go build.
func (env *commandEnv) checkGo(c shellCommand, report func(string, ...any)) {
	if len(c.words) < 2 {
		return
	}
	sub := c.words[1]
	if sub != "test" && sub != "run" && sub != "build" && sub != "vet" {
		return // go get, go install, go mod …: nothing to check here
	}
	var (
		pkgs     []string
		patterns = map[string][]string{} // flag → regexps
		rest     []string                // go run: the program's arguments
		unknown  []string                // flags go does not know
	)
	args := c.words[2:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-args" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if strings.Contains(a, "@") || !(strings.HasPrefix(a, ".") || strings.HasPrefix(a, "github.com/agentbridge/agentbridge")) {
				if i > 0 && len(unknown) > 0 && args[i-1] == "-"+unknown[len(unknown)-1] {
					continue // the value of a flag go does not know, reported below
				}
				if sub == "run" {
					return // a tool at a version: go run honnef.co/…@v0.8.2
				}
				if len(pkgs) == 0 {
					report("%q is no package path of this repository (./pkg, ./pkg/...)", a)
				}
				continue
			}
			pkgs = append(pkgs, a)
			if sub == "run" {
				rest = args[i+1:]
				break
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimPrefix(name, "test.")
		takesValue, ok := env.goFlags[name]
		if !ok {
			unknown = append(unknown, name)
			continue // a test's own flag is a bool or written -flag=value
		}
		if takesValue && !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		if takesValue {
			patterns[name] = append(patterns[name], value)
		}
	}
	if len(pkgs) == 0 {
		if sub == "run" {
			return // the command named in prose
		}
		pkgs = []string{"."}
	}
	var dirs []string
	for _, p := range pkgs {
		d, err := env.packageDirs(c.dir, p)
		if err != nil {
			report("%v", err)
			continue
		}
		dirs = append(dirs, d...)
	}
	for _, name := range unknown {
		known := false
		for _, d := range dirs {
			_, flags := env.testFuncs(d)
			_, defined := flags[name]
			known = known || sub == "test" && defined
		}
		if !known {
			report("go %s has no flag -%s (go help testflag, go help build), nor do the tests of %s", sub, name, strings.Join(dirs, " "))
		}
	}
	if len(dirs) == 0 {
		return
	}
	if sub == "test" {
		for _, flag := range []string{"run", "skip", "list", "bench", "fuzz"} {
			for _, re := range patterns[flag] {
				env.checkPattern(flag, re, dirs, report)
			}
		}
	}
	if sub == "run" && len(dirs) == 1 {
		p, err := readProgram(filepath.Join(env.root, dirs[0]))
		switch {
		case err != nil:
			report("%v", err)
		case p == nil:
			report("%s is no main package", dirs[0])
		default:
			env.checkProgram(filepath.Base(dirs[0]), p, rest, report)
		}
	}
}

// packageDirs returns the folders (relative to the root) of the packages a
// pattern names when go runs in dir.
func (env *commandEnv) packageDirs(dir, pattern string) ([]string, error) {
	rel := pattern
	if r, ok := strings.CutPrefix(pattern, "github.com/agentbridge/agentbridge"); ok {
		dir, rel = "", "."+r
	}
	base, all := strings.CutSuffix(rel, "/...")
	if base == "..." {
		base, all = ".", true
	}
	start := path(dir, base)
	fi, err := os.Stat(filepath.Join(env.root, start))
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no folder %s (the package %s, run in %s)", start, pattern, orRoot(dir))
	}
	if !all {
		if !hasGoFiles(filepath.Join(env.root, start)) {
			return nil, fmt.Errorf("%s has no Go files", start)
		}
		return []string{start}, nil
	}
	var dirs []string
	filepath.WalkDir(filepath.Join(env.root, start), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if name := d.Name(); p != filepath.Join(env.root, start) && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if hasGoFiles(p) {
			dirs = append(dirs, filepath.ToSlash(mustRel(env.root, p)))
		}
		return nil
	})
	return dirs, nil
}

func orRoot(dir string) string {
	if dir == "" || dir == "." {
		return "the repository's root"
	}
	return dir
}

func hasGoFiles(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(files) > 0
}

// checkPattern checks that each top-level alternative of the regexp re,
// given to go test's -flag, matches a function of the kind that flag
// selects in one of dirs. "^$" (nothing) is let through.
func (env *commandEnv) checkPattern(flag, re string, dirs []string, report func(string, ...any)) {
	prefixes := map[string][]string{
		"run": {"Test", "Fuzz", "Example"}, "skip": {"Test", "Fuzz", "Example"}, "list": {"Test", "Fuzz", "Example", "Benchmark"},
		"bench": {"Benchmark"}, "fuzz": {"Fuzz"},
	}[flag]
	top, _, _ := strings.Cut(re, "/") // subtests are not checked
	for _, alt := range topAlternatives(top) {
		if alt == "^$" {
			continue
		}
		r, err := regexp.Compile(alt)
		if err != nil {
			report("-%s %q: %v", flag, re, err)
			continue
		}
		found := false
		for _, d := range dirs {
			funcs, _ := env.testFuncs(d)
			for fn := range funcs {
				if hasAnyPrefix(fn, prefixes) && r.MatchString(fn) {
					found = true
				}
			}
		}
		if !found {
			report("-%s %q: no %s function matches %q in %s", flag, re, strings.Join(prefixes, ", "), alt, strings.Join(dirs, " "))
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// topAlternatives splits a regexp at the | outside parentheses; ^…$
// around the whole applies to each part.
func topAlternatives(re string) []string {
	anchored := strings.HasPrefix(re, "^(") && strings.HasSuffix(re, ")$") && closesAtEnd(re[1:len(re)-1])
	if anchored {
		re = re[2 : len(re)-2]
	}
	var alts []string
	depth, start := 0, 0
	for i := 0; i < len(re); i++ {
		switch re[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '|':
			if depth == 0 {
				alts = append(alts, re[start:i])
				start = i + 1
			}
		}
	}
	alts = append(alts, re[start:])
	if anchored {
		for i := range alts {
			alts[i] = "^(" + alts[i] + ")$"
		}
	}
	return alts
}

// closesAtEnd says whether the parenthesis opening s closes at its end.
func closesAtEnd(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(s)-1 {
				return false
			}
		}
	}
	return true
}

// checkProgram checks an example program's subcommand and flags: a
// subcommand's own flags are only its own.
func (env *commandEnv) checkProgram(name string, p *program, args []string, report func(string, ...any)) {
	var positional, flags []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimSuffix(strings.TrimPrefix(args[i], "["), "]") // [--json]: optional
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flag, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		flags = append(flags, flag)
		if p.flags[flag] && !hasValue {
			i++
		}
	}
	var subs []string // the subcommand, or its alternatives (tasks get|wait)
	if len(positional) > 0 && len(p.subcommands) > 0 && isWord(positional[0]) {
		for _, first := range strings.Split(positional[0], "|") {
			if len(positional) > 1 && isWord(positional[1]) && hasPrefixCommand(p.subcommands, first+" ") {
				for _, second := range strings.Split(positional[1], "|") {
					subs = append(subs, first+" "+second)
				}
				continue
			}
			subs = append(subs, first)
		}
	}
	for _, s := range subs {
		if !p.subcommands[s] {
			report("%s has no subcommand %q", name, s)
		}
	}
	for _, flag := range flags {
		if flag == "h" || flag == "help" {
			continue
		}
		if len(subs) == 0 {
			if _, ok := p.flags[flag]; !ok {
				report("%s defines no flag -%s (its flags: %s)", name, flag, flagList(p.flags))
			}
			continue
		}
		for _, s := range subs {
			own := maps.Clone(p.global)
			maps.Copy(own, p.subFlags[s])
			if _, ok := own[flag]; !ok && p.subcommands[s] {
				report("%s %s defines no flag -%s (its flags: %s)", name, s, flag, flagList(own))
			}
		}
	}
}

// isWord says whether an argument reads as a subcommand (not a URL, a
// path, JSON or a placeholder in capitals).
var subcommandWord = regexp.MustCompile(`^[a-z][a-z0-9?-]*(\|[a-z][a-z0-9?-]*)*$`)

func isWord(s string) bool { return subcommandWord.MatchString(s) }

func hasPrefixCommand(cmds map[string]bool, prefix string) bool {
	for c := range cmds {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func flagList(flags map[string]bool) string {
	var names []string
	for f := range flags {
		names = append(names, "-"+f)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// TestCheckCommands shows that the command check catches a missing
// package, benchmark, test, fuzz target, go flag, program flag,
// subcommand, script and environment variable, and lets through what
// exists.
func TestCheckCommands(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "pkg", "pkg.go"), "package pkg\n")
	writeFile(t, filepath.Join(root, "pkg", "pkg_test.go"), "package pkg\n\nimport (\"flag\"; \"testing\")\n\n"+
		"var update = flag.Bool(\"update\", false, \"\")\n\n"+
		"func TestHello(t *testing.T) {}\nfunc BenchmarkHello(b *testing.B) {}\nfunc FuzzHello(f *testing.F) {}\nfunc ExampleHello() {}\n")
	writeFile(t, filepath.Join(root, "nested", "sub", "sub.go"), "package sub\n")
	writeFile(t, filepath.Join(root, "nested", "sub", "sub_test.go"), "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {}\n")
	writeFile(t, filepath.Join(root, "examples", "tool", "main.go"), "package main\n\nimport (\"flag\"; \"os\")\n\n"+
		"const tokenEnv = \"AGENTBRIDGE_TOOL_TOKEN\"\n\n"+
		"func newFlagSet() *flag.FlagSet {\n\tfs := flag.NewFlagSet(\"tool\", flag.ContinueOnError)\n"+
		"\tfs.String(\"addr\", \"\", \"\")\n\tvar v bool\n\tfs.BoolVar(&v, \"json\", false, \"\")\n\treturn fs\n}\n\n"+
		"func check() {\n\tfs := flag.NewFlagSet(\"check\", flag.ContinueOnError)\n\tfs.Bool(\"strict\", false, \"\")\n}\n\n"+
		"func main() {\n\tswitch os.Args[1] {\n\tcase \"check\", \"run\":\n\t}\n\t_ = []struct{ name string }{{name: \"tasks start\"}}\n}\n")
	writeFile(t, filepath.Join(root, "sub", "cmd", "subtool", "main.go"), "package main\n\nimport \"flag\"\n\nvar v = flag.Bool(\"v\", false, \"\")\n\nfunc main() {}\n")
	writeFile(t, filepath.Join(root, ".ci", "run"), "#!/bin/sh\n# `.ci/run fast` runs the fast part.\n")
	require.NoError(t, os.Chmod(filepath.Join(root, ".ci", "run"), 0o755))
	writeFile(t, filepath.Join(root, ".ci", "plain"), "#!/bin/sh\n")
	env := loadCommandEnv(t, root)

	tests := []struct {
		name string
		md   string
		want string // a substring of the one problem; "" means no problem
	}{
		{"test and bench", "Run `go test -race -run 'TestHello|ExampleHello' -bench=BenchmarkHello -benchtime 1x ./pkg/`.", ""},
		{"nothing but benchmarks", "`go test -run '^$' -bench . ./pkg`", ""},
		{"anchored alternatives", "`go test -run '^(TestHello|ExampleHello)$' ./pkg`", ""},
		{"all packages", "```sh\ngo test ./...\ngo test -run TestSub ./nested/...\n```", ""},
		{"fuzz", "`go test -fuzz FuzzHello -fuzztime 10s ./pkg`", ""},
		{"in a subshell", "```\n(cd nested && go test -run TestSub ./sub)\n```", ""},
		{"a subshell in prose", "Run `(cd nested && go test -run TestSub ./sub)`.", ""},
		{"a subshell in prose, wrong", "Run `(cd nested && go test -run TestHello ./sub)`.", `no Test, Fuzz, Example function matches "TestHello" in nested/sub`},
		{"cd on its own line", "```\ncd nested\ngo test ./sub\n```", ""},
		{"program", "`tool check --addr 127.0.0.1:1 -json` and `go run ./examples/tool run`, `tool tasks start`", ""},
		{"subcommands in prose", "`tool`'s subcommands: `check [--strict]`, `run`, `tasks start|stop`.", `tool has no subcommand "tasks stop"`},
		{"a subcommand's flag in prose", "`tool`'s subcommands: `check [--strict]`, `run [--strict]`.", "tool run defines no flag -strict"},
		{"a usage's alternatives", "`tool check [--addr A | --json]` and `tool check [--addr A | --verbose]`", "tool check defines no flag -verbose"},
		{"env prefix, redirection", "```\nAGENTBRIDGE_TOOL_TOKEN=x tool run > out.txt 2>&1\n```", ""},
		{"script", "```\n.ci/run\nbash .ci/run fast\n```", ""},
		{"tool at a version", "`go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./pkg`", ""},
		{"a test binary", "```\ngo test -c -o after.test ./pkg   # and before.test from main\n" +
			"P='^Benchmark(Hello)$'\nfor i in $(seq 8); do for t in ./before.test ./after.test; do\n" +
			"  $t -test.run '^$' -test.bench \"$P\" -test.benchtime 20x >> ${t%.test}.txt\ndone; done\n```", ""},
		{"a test binary's stale benchmark", "```\ngo test -c -o after.test ./pkg\n./before.test -test.bench Gone\n```", `no Benchmark function matches "Gone" in pkg`},
		{"a test binary from nowhere", "```\n./after.test -test.bench Hello\n```", "no go test -c in this block says which package it is"},
		{"unchecked", "<!-- unchecked: a loop -->\n```\nfor p in x; do go test -bench Nope ./nowhere; done\n```", ""},
		{"prose", "Some `code` and a `-flag` alone.", ""},
		{"prose: a program's flags", "`tool` takes `--addr HOST:PORT`\nand `-json`; `go test ./pkg` takes `-count 4`.", ""},
		{"a program's unknown flag in prose", "`go run ./examples/tool` takes `--addr` and `--verbose`.", "tool defines no flag -verbose"},
		{"prose: another program's flag", "`tool` flags `-json`; load it with `chromium --load-extension=DIR` (`--load-extension`).", ""},
		{"go test's unknown flag in prose", "With `go test ./pkg`, `-benchtim 1x`.", "go test has no flag -benchtim"},
		{"a program named in passing", "`go run ./examples/tool` starts (`other`) with `--json`, not `--verbose`.", "tool defines no flag -verbose"},
		{"a span over two lines", "Run `go test -run '^$' -bench\nBenchmarkGone ./pkg` to see.", `matches "BenchmarkGone"`},
		{"unchecked paragraph", "<!-- unchecked: a sketch -->\nRun `go test ./gone` to see.", ""},
		{"missing benchmark", "`go test -run '^$' -bench BenchmarkGone ./pkg`", `no Benchmark function matches "BenchmarkGone" in pkg`},
		{"one stale alternative", "`go test -run 'TestHello|TestGone' ./pkg`", `matches "TestGone"`},
		{"a benchmark is no test", "`go test -run BenchmarkHello ./pkg`", "no Test, Fuzz, Example function"},
		{"missing fuzz target", "`go test -fuzz FuzzGone ./pkg`", "no Fuzz function matches"},
		{"missing package", "`go test ./gone/`", "no folder gone"},
		{"moved into a module", "`go test ./lib`", "no folder lib"},
		{"wrong folder", "```\n(cd nested && go test ./pkg)\n```", "no folder nested/pkg (the package ./pkg, run in nested)"},
		{"go flag", "`go test -benchtim 1x ./pkg`", "go test has no flag -benchtim"},
		{"a test's own flag", "`go test -run TestHello -update ./pkg`", ""},
		{"another package's test flag", "`go test -update ./nested/sub`", "go test has no flag -update"},
		{"program flag", "`tool check --adr x`", "tool check defines no flag -adr (its flags: -addr -json -strict)"},
		{"a subcommand's own flag", "`tool check --strict URL`", ""},
		{"another subcommand's flag", "`tool run --strict URL`", "tool run defines no flag -strict (its flags: -addr -json)"},
		{"go run flag", "`go run ./examples/tool --verbose`", "tool defines no flag -verbose"},
		{"subcommand", "`tool chek URL`", `tool has no subcommand "chek"`},
		{"second word", "`tool tasks stop ID`", `tool has no subcommand "tasks stop"`},
		{"missing script", "```\n.ci/gone\n```", "the script .ci/gone does not exist"},
		{"not executable", "`bash .ci/plain`", "the script .ci/plain is not executable"},
		{"script argument", "`.ci/run slow`", `usage comment names no "slow"`},
		{"environment variable", "Set WEBOPERATOR_GONE_TOKEN.", "environment variable WEBOPERATOR_GONE_TOKEN: no Go code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, problems := checkCommands("README.md", []byte(tt.md), env)
			if tt.want == "" {
				assert.Empty(t, problems)
				if !strings.HasPrefix(tt.name, "prose") && !strings.HasPrefix(tt.name, "unchecked") {
					assert.NotEmpty(t, cmds, "the command was found")
				}
				return
			}
			require.Len(t, problems, 1, "%q", problems)
			assert.Contains(t, problems[0], tt.want)
		})
	}

	// In the README of a folder with one program, a lone flag is that
	// program's.
	_, problems := checkCommands("sub/README.md", []byte("| `-v` | verbose |\n| `--verbose` | too |\n\nMeasured with `-count 4` (code `-32602`).\n"), env)
	require.Len(t, problems, 1, "%q", problems)
	assert.Contains(t, problems[0], "sub/README.md:2: \"--verbose\": subtool defines no flag -verbose")
}
