package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsCases are JSON texts whose JavaScript reading differs from Go's:
// property order, duplicates, number forms, escapes.
var jsCases = []string{
	`{"b":1,"a":2,"1":3,"0":4,"01":5,"4294967295":6,"4294967294":7,"-1":8}`,
	`{"a":1,"b":2,"a":3}`,
	`{"2":"x","b":{"1":1,"0":0},"2":"y"}`,
	`[1.50, 1E3, 1e21, 1e-7, 123456789012345678901234, 0.000001, -0, 5e-324, 1.7976931348623157e308, 1e400, -1e400, 0.1, 100, 1e20, 123e-20, 2.5e+25, -12.5e-3]`,
	`"\u0000\u001f\u007f\u2028\u2029\ud800\udc00 \ud800x \udfff \/ \" \\ é 😀 \b\f\n\r\t <&>"`,
	`"\ud800\ud800\udc00\udbff"`,
	"\"caf\xc3\xa9 \xff \xe2\x82 \xed\xa0\x80 end\"",
	`{"z":{"2":1,"1":2,"x":[{"b":1,"a":2}]},"e":[],"o":{},"n":[[]],"m":{"a":{}}}`,
	` { "spaced" : [ 1 , 2 ] } `,
	`null`, `true`, `"s"`, `42`, `[]`, `{}`,
	`{"__proto__":1,"constructor":2}`,
}

// node runs script with the inputs (base64, so that bytes that are not
// UTF-8 reach Node's own decoder) and returns its outputs: the ground
// truth of what JavaScript does. It skips without Node, unless CI is set.
func node(t *testing.T, script string, inputs []string) []string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		// CI installs Node for the Linux run; the Windows run under Wine
		// cannot start a Linux node, and the same texts are checked there.
		if os.Getenv("CI") != "" && runtime.GOOS != "windows" {
			t.Fatal("node is not installed; CI installs it")
		}
		t.Skip("node is not installed: the texts are checked against JavaScript itself")
	}
	enc := make([]string, len(inputs))
	for i, in := range inputs {
		enc[i] = base64.StdEncoding.EncodeToString([]byte(in))
	}
	stdin, err := json.Marshal(enc)
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), bin, "-e", `
const inputs = JSON.parse(require('fs').readFileSync(0, 'utf8')).map((b) => Buffer.from(b, 'base64').toString('utf8'));
const f = `+script+`;
process.stdout.write(JSON.stringify(inputs.map(f)));`)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var got []string
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(inputs))
	return got
}

// randomJSON returns a random JSON text of the kinds results hold.
func randomJSON(r *rand.Rand, depth int) string {
	switch n := r.IntN(10); {
	case n < 2 && depth < 4:
		var b strings.Builder
		b.WriteByte('{')
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteByte(',')
			}
			keys := []string{"a", "b", "0", "1", "10", "2", "01", "title", "status", "é", "4294967295"}
			b.WriteString(strconv.Quote(keys[r.IntN(len(keys))]) + ":" + randomJSON(r, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case n < 4 && depth < 4:
		parts := make([]string, r.IntN(5))
		for i := range parts {
			parts[i] = randomJSON(r, depth+1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case n < 6:
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = r.Float64() * math.Pow(10, float64(r.IntN(60)-30))
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case n < 7:
		return strconv.Itoa(r.IntN(1 << 30))
	case n < 9:
		runes := []rune{'a', '"', '\\', '\n', 0x01, 0x7f, 'é', 0x2028, 0x1f600, '/', '<'}
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		s, _ := json.Marshal(b.String())
		return string(s)
	}
	return []string{"true", "false", "null"}[r.IntN(3)]
}

// TestJSStringifyIsJavaScripts: jsStringify writes what
// JSON.stringify(JSON.parse(text), null, 2) writes, byte for byte.
func TestJSStringifyIsJavaScripts(t *testing.T) {
	inputs := append([]string(nil), jsCases...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		inputs = append(inputs, randomJSON(r, 0))
	}
	want := node(t, `(s) => JSON.stringify(JSON.parse(s), null, 2)`, inputs)
	for i, in := range inputs {
		if got := jsStringify(json.RawMessage(in)); got != want[i] {
			t.Errorf("jsStringify(%q)\n got %q\nwant %q", in, got, want[i])
		}
	}
}

// TestJSStringAndTruthiness: String(v) and !!v as JavaScript has them.
func TestJSStringAndTruthiness(t *testing.T) {
	inputs := append([]string{`[1,[2,3],null,{"a":1},"s",true,[null,[]]]`, `1e21`, `0.1`, `-0`, `0`, `""`, `"0"`,
		`{}`, `[]`, `[null]`, `false`, `null`, `1e400`, `-1e400`, `"a\u0000b"`}, jsCases...)
	wantString := node(t, `(s) => String(JSON.parse(s))`, inputs)
	wantTruthy := node(t, `(s) => String(!!JSON.parse(s))`, inputs)
	for i, in := range inputs {
		assert.Equal(t, wantString[i], jsValue(in).String(), "String(%s)", in)
		assert.Equal(t, wantTruthy[i], strconv.FormatBool(jsValue(in).truthy()), "!!%s", in)
	}
	assert.Equal(t, "undefined", jsValue(nil).String())
	assert.False(t, jsValue(nil).truthy())
}

// TestJSCanonicalBudget: objects nested deep that each need reordering
// would copy with the square of their depth; past the budget the text is
// the result as sent.
func TestJSCanonicalBudget(t *testing.T) {
	depth := 5000
	src := strings.Repeat(`{"b":0,"a":0,"1":`, depth) + "0" + strings.Repeat("}", depth)
	_, ok := jsCanonical([]byte(src))
	assert.False(t, ok)
	shallow := `{"b":0,"1":{"b":0,"1":0}}`
	out, ok := jsCanonical([]byte(shallow))
	require.True(t, ok)
	assert.Equal(t, `{"1":{"1":0,"b":0},"b":0}`, string(out))
}

func FuzzJSCanonical(f *testing.F) {
	for _, c := range jsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, ok := jsCanonical(src)
		if !ok {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("jsCanonical(%q) = %q, not JSON", src, out)
		}
		again, ok := jsCanonical(out)
		if !ok || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
	})
}
