package safeprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ordinary are answers within the limits: Indent must print them as
// json.Indent does.
var ordinary = []string{
	`{}`, `[]`, `null`, `true`, `-1.5e+3`, `"a\"b\\"`, `"é\u00e9 \u2028"`,
	` {"a" : [1, 2 ,{ }, [ ] ,"x"] , "b":{"c":null}}  `,
	"[\n]\n", "{\"a\":[[[[1]]]]}\r\n\t ", `[{"k":"v, ] } :"},{"":""}]`,
	`{"ok":true,"protocol":"webagents/0.1","results":{"a":{"items":[{"id":"kbd-75","price":89.5}]}}}`,
}

func indentStd(t testing.TB, src []byte) (string, error) {
	var b bytes.Buffer
	err := json.Indent(&b, src, "", "  ")
	return b.String(), err
}

func TestIndentMatchesJSONIndent(t *testing.T) {
	for _, src := range ordinary {
		want, err := indentStd(t, []byte(src))
		require.NoError(t, err, src)
		var w bytes.Buffer
		require.NoError(t, Indent(&w, []byte(src), nil), src)
		assert.Equal(t, want, w.String(), src)
		got, err := AppendIndent([]byte("prefix"), []byte(src), nil)
		require.NoError(t, err, src)
		assert.Equal(t, "prefix"+want, string(got), src)
	}
}

func TestIndentInvalidAsJSONIndent(t *testing.T) {
	for _, src := range []string{``, ` `, `{`, `[1,]`, `{"a" 1}`, `tru`, `1 2`, `"a`, "\"\x01\"", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		_, want := indentStd(t, []byte(src))
		require.Error(t, want, src)
		var w bytes.Buffer
		err := Indent(&w, []byte(src), nil)
		assert.Equal(t, want, err, "%.20q", src)
		assert.Zero(t, w.Len(), "nothing written for %.20q", src)
		dst, err := AppendIndent([]byte("x"), []byte(src), nil)
		assert.Equal(t, want, err)
		assert.Equal(t, "x", string(dst))
	}
}

func TestIndentPrintsDeepContainersCompactly(t *testing.T) {
	src := []byte(`{"a":[1,{"b": [ 2 , {"c" : 3}, [] ]}], "d":{}}`)
	var w bytes.Buffer
	require.NoError(t, Indent(&w, src, &IndentOptions{MaxDepth: 2}))
	assert.Equal(t, `{
  "a": [
    1,
    {"b":[2,{"c":3},[]]}
  ],
  "d": {}
}`, w.String())
	assert.True(t, json.Valid(w.Bytes()))
	var got, want any
	require.NoError(t, json.Unmarshal(w.Bytes(), &got))
	require.NoError(t, json.Unmarshal(src, &want))
	assert.Equal(t, want, got, "the same value")
}

func TestIndentCutsAtTheSizeLimit(t *testing.T) {
	src := []byte(`["ééééé", 2]`)
	var w bytes.Buffer
	require.NoError(t, Indent(&w, src, &IndentOptions{MaxBytes: 10}))
	// "[\n  \"éé" is 10 bytes; a third é would split.
	assert.Equal(t, "[\n  \"éé\n[output cut at 10 bytes: the last 11 of the input's 17 bytes are not shown]", w.String())
	got, err := AppendIndent(nil, src, &IndentOptions{MaxBytes: 10})
	require.NoError(t, err)
	assert.Equal(t, w.String(), string(got))
	assert.True(t, utf8.Valid(got))
}

// hostile returns a JSON text of about size bytes nested depth levels
// deep, its bulk short members at the deepest level: what json.Indent
// indents by 2×depth spaces each.
func hostile(depth, size int) []byte {
	b := bytes.Repeat([]byte("["), depth)
	b = append(b, '0')
	for len(b)+depth+2 <= size {
		b = append(b, ",0"...)
	}
	return append(b, bytes.Repeat([]byte("]"), depth)...)
}

// nested is depth levels of [ and then ] (20 KB for 10,000 levels, the
// deepest encoding/json accepts).
func nested(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileAnswersCostLittleMemory prints the hostile answers of issue
// 21 and measures the bytes allocated: json.Indent's output, and so its
// memory, grows with the square of the depth (about 18 MB for the 20 KB
// answer nested 1,000 deep, 400 MB for 10,000 levels, 1 GB for 1 MiB).
func TestHostileAnswersCostLittleMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"20 KB, 10,000 levels", nested(10000)},
		{"20 KB, 1,000 levels", hostile(1000, 20<<10)},
		{"1 MiB, 1,000 levels", hostile(1000, 1<<20)},
		{"1 MiB, 64 levels", hostile(64, 1<<20)},
		{"1 MiB of 10,000-level values", append(append([]byte("["), bytes.Repeat(append(nested(9999), ','), (1<<20)/20000)...), "0]"...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.src)
			require.True(t, json.Valid(tc.src))
			var err error
			streamed := allocated(func() { err = Indent(io.Discard, tc.src, nil) })
			require.NoError(t, err)
			var out string
			held := allocated(func() { out, err = IndentString(tc.src, nil) })
			require.NoError(t, err)
			t.Logf("%d bytes in: Indent allocated %d bytes, IndentString %d for %d bytes out", n, streamed, held, len(out))
			// json.Valid's scanner grows its stack to the depth, 8 bytes a
			// level up to 10,000 (about 360 KB allocated, growth included);
			// the printer itself holds 4 KiB.
			assert.Less(t, streamed, uint64(512<<10), "Indent")
			assert.LessOrEqual(t, len(out), DefaultMaxBytes+200, "the output is capped")
			assert.Less(t, held, uint64(len(out)+1<<20), "IndentString: the output, allocated once")
		})
	}
}

func TestHostileAnswersWithinASmallMultiple(t *testing.T) {
	for _, src := range [][]byte{nested(10000), hostile(1000, 20<<10), hostile(1000, 1<<20)} {
		out, err := IndentString(src, nil)
		require.NoError(t, err)
		assert.Less(t, len(out), 2*len(src)+16<<10, "deep nesting printed compactly")
		assert.True(t, json.Valid([]byte(out)))
	}
}

func FuzzIndent(f *testing.F) {
	for _, s := range ordinary {
		f.Add([]byte(s), 0, 0)
	}
	f.Add([]byte(`{"a":[1,{"b":[2]}]}`), 2, 0)
	f.Add([]byte(`["ééé"]`), 0, 7)
	f.Fuzz(func(t *testing.T, src []byte, maxDepth, maxBytes int) {
		maxDepth, maxBytes = maxDepth%80, maxBytes%4096
		opts := &IndentOptions{MaxDepth: maxDepth, MaxBytes: maxBytes}
		want, wantErr := indentStd(t, src)
		var w bytes.Buffer
		err := Indent(&w, src, opts)
		got, appendErr := AppendIndent(nil, src, opts)
		str, strErr := IndentString(src, opts)
		assert.Equal(t, appendErr, strErr)
		assert.Equal(t, string(got), str)
		if wantErr != nil {
			assert.Equal(t, wantErr, err)
			assert.Equal(t, wantErr, appendErr)
			assert.Zero(t, w.Len())
			return
		}
		require.NoError(t, err)
		require.NoError(t, appendErr)
		assert.Equal(t, w.String(), string(got), "Indent and AppendIndent agree")
		depth, size := opts.limits()
		out := w.String()
		cut := strings.LastIndex(out, "\n[output cut at ")
		if depthOf(src) <= depth {
			if len(want) <= size {
				assert.Equal(t, want, out, "within the limits: json.Indent's output")
				return
			}
			require.GreaterOrEqual(t, cut, 0, "a cut output says so")
		}
		if cut >= 0 {
			assert.LessOrEqual(t, cut, size)
			assert.True(t, strings.HasPrefix(want, out[:cut]) || depthOf(src) > depth, "what is shown is json.Indent's")
			assert.True(t, utf8.ValidString(out[:cut]) || !utf8.Valid(src), "cut at a character boundary")
			return
		}
		// Deeper than MaxDepth and not cut: the same value, valid JSON.
		require.True(t, json.Valid([]byte(out)), out)
		var a, b any
		require.NoError(t, json.Unmarshal(src, &a))
		require.NoError(t, json.Unmarshal([]byte(out), &b))
		assert.Equal(t, a, b)
	})
}

// depthOf is the nesting depth of a valid JSON text.
func depthOf(src []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == '[' || c == '{'):
			d++
			deepest = max(deepest, d)
		case !inString && (c == ']' || c == '}'):
			d--
		}
	}
	return deepest
}

// snapshotLike is an ordinary result: a page snapshot's list of nodes.
func snapshotLike() []byte {
	var b bytes.Buffer
	b.WriteString(`{"url":"https://shop.example/","title":"Shop","nodes":[`)
	for i := range 400 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"ref":"@e%d","role":"link","name":"Product %d — wool socks","inViewport":%t,"bounds":{"x":%d,"y":%d,"w":120,"h":18}}`, i, i, i%3 == 0, i*7, i*18)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func BenchmarkIndent(b *testing.B) {
	src := snapshotLike()
	b.Run("json.Indent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			var out bytes.Buffer
			_ = json.Indent(&out, src, "", "  ")
		}
	})
	b.Run("IndentString", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			_, _ = IndentString(src, nil)
		}
	})
	b.Run("Indent", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			_ = Indent(io.Discard, src, nil)
		}
	})
}
