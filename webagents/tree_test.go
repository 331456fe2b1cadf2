package webagents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sameTree fails t unless fastTree, when it decodes data, agrees with
// encoding/json (decodeTreeSlow), and decodeTree agrees with it always.
func sameTree(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := decodeTreeSlow(data)
	if got, ok := fastTree(data); ok {
		if wantErr != nil {
			t.Fatalf("fastTree decoded %q, which encoding/json refuses: %v", data, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastTree(%q) = %#v, encoding/json %#v", data, got, want)
		}
	}
	got, err := decodeTree(data)
	if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeTree(%q) = %#v, %v; encoding/json %#v, %v", data, got, err, want, wantErr)
	}
	if err == nil {
		sameEncoding(t, got)
	}
}

// sameEncoding fails t unless encodeTree encodes v as marshalCompact does.
func sameEncoding(t *testing.T, v any) {
	t.Helper()
	want, wantErr := marshalCompact(v)
	got, err := encodeTree(v)
	if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("encodeTree(%#v) = %q, %v; marshalCompact %q, %v", v, got, err, want, wantErr)
	}
}

func TestEncodeTreeMatchesMarshalCompact(t *testing.T) {
	for _, v := range []any{
		nil, true, false, json.Number("1.5e3"), json.Number(""), json.Number("01"), json.Number("1x"),
		"", "plain <&> ascii\x7f\x7f", "quote\" back\\slash", "\x00\x1f\n\t", "é\u2028\u2029\ufffd", "\xff",
		[]any(nil), []any{}, map[string]any(nil), map[string]any{},
		map[string]any{"b": 1.5, "a": []any{int64(2), "x"}},
		map[string]any{"z": nil, "a": json.Number("1"), "é": "x", "A": map[string]any{"k": []any{true}}, "b": "", "c": "", "d": "", "e": "", "f": "", "g": ""},
		[]any{map[string]any{"$ref": "x"}, json.Number("-0"), float64(3)},
	} {
		sameEncoding(t, v)
	}
}

// TestEncodeTreeStringsWithoutReflection: strings that need escaping or
// are not ASCII (any text in most of the world's scripts, an agent's input
// of "é"s) are encoded in place, as marshalCompact would, not by a
// json.Encoder each: that made encodeTree 5x slower than the
// marshalCompact it replaced, with an allocation per string.
func TestEncodeTreeStringsWithoutReflection(t *testing.T) {
	var all []any
	for _, s := range []string{"é", "日本語", "line\nbreak\ttab\r\b\f\x00\x1f\x7f", `quote" back\`, "\u2028\u2029\u2027\u202a",
		"bad \xff\xc3 utf-8 \xed\xa0\x80", "<&> \U0001F600", "\ufffd", ""} {
		sameEncoding(t, s)
		sameEncoding(t, map[string]any{s: s})
		all = append(all, s)
	}
	sameEncoding(t, all)
	tree := make([]any, 1000)
	for i := range tree {
		tree[i] = map[string]any{"é": all[i%len(all)]}
	}
	sameEncoding(t, tree)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := encodeTree(tree); err != nil {
			t.Fatal(err)
		}
	})
	// The output buffer grows by doubling: a few dozen allocations, not
	// one or more per string.
	assert.Less(t, allocs, float64(100))
}

// TestEncodeTreeNumbersWithoutAllocating: checking a json.Number's
// grammar before writing it allocates nothing (it copied the number to a
// []byte and back to a json.Number, two allocations a number).
func TestEncodeTreeNumbersWithoutAllocating(t *testing.T) {
	tree := make([]any, 1000)
	for i := range tree {
		tree[i] = json.Number(fmt.Sprintf("-%d.5e+%d", i*7919, i%300))
	}
	sameEncoding(t, tree)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := encodeTree(tree); err != nil {
			t.Fatal(err)
		}
	})
	assert.Less(t, allocs, float64(100))
	for _, n := range []string{"0", "-0", "1.5", "1E+2", "1e-2", "-", "1.", "1e", "1e+", ".5", "+1", "0x1", "1 ", " 1", "-01", "00", "1.5e3x", "--1", "1.e1", "1e1.5", "9" + strings.Repeat("9", 700)} {
		sameEncoding(t, json.Number(n))
		sameEncoding(t, []any{json.Number(n)})
	}
}

var treeCorpus = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+2`, `"x"`, ` {"a" : [1, "b", null, true, {"c":{}}] } `,
	`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"\u0041":1,"A":2}`,
	`"\u00e9\ud83d\ude00\ud800x\\\/\b\f\n\r\t\""`, "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"",
	`{"$ref":"find.productId"}`, `{"items":[{"productId":"kbd-75","quantity":1}]}`,
	`01`, `1.`, `.5`, `-`, `1e`, `+1`, `1 2`, `{} x`, `{}}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[`, `{`, `"abc`, `"a\`,
	`"\x"`, `"\u12"`, "\"\x01\"", `tru`, `nul`, `truex`, `[true false]`, `nan`, `1e400`, `-9999999999999999999999`,
	"\t\n\r {}", "{}\n", ``, ` `,
	strings.Repeat("[", 300) + strings.Repeat("]", 300),
	strings.Repeat(`{"a":`, 199) + `1` + strings.Repeat("}", 199),
	strings.Repeat(`{"a":`, 201) + `1` + strings.Repeat("}", 201),
}

func TestFastTreeMatchesEncodingJSON(t *testing.T) {
	for _, doc := range treeCorpus {
		sameTree(t, []byte(doc))
	}
	for _, body := range batchCorpus {
		sameTree(t, []byte(body))
	}
	// The common documents do take the fast path.
	for _, doc := range []string{specBatch, `{"q":"x","n":[1,2.5,-3e2],"b":true,"z":null,"s":"é"}`} {
		if _, ok := fastTree([]byte(doc)); !ok {
			t.Errorf("fastTree refused %q", doc)
		}
	}
}

func FuzzFastTreeMatchesEncodingJSON(f *testing.F) {
	for _, doc := range treeCorpus {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameTree(t, data)
	})
}

func FuzzEncodeTreeStringMatchesMarshalCompact(f *testing.F) {
	for _, s := range []string{"", "a", "é\u2028\u2029", "\x00\x1f\x7f\"\\", "\xff\xed\xa0\x80\xc3", "<&>", "\U0001F600"} {
		f.Add(s)
	}
	// Every byte, alone and after a lead byte.
	for c := 0; c < 256; c++ {
		f.Add(string([]byte{byte(c)}))
		f.Add(string([]byte{0xe2, 0x80, byte(c)}))
	}
	f.Fuzz(func(t *testing.T, s string) {
		sameEncoding(t, s)
		sameEncoding(t, map[string]any{s: []any{s}})
		sameEncoding(t, json.Number(s))
	})
}

// FuzzRawPath checks rawPath against walkPath on the decoded document.
func FuzzRawPath(f *testing.F) {
	f.Add([]byte(`{"results":[{"id":"kb-1","name":"Wireless Keyboard","price":49.99}]}`), "results.0.id")
	f.Add([]byte(` {"a":{"b":1},"a":{"b":[true,null,"x\"y"]} } `), "a.b.2")
	f.Add([]byte(`{"\u0061":1,"a\u00e9":{"x":2},"aé":{"x":3}}`), "aé.x")
	f.Add([]byte(`[[],[1,[2,{"k":"\ud800"}]]]`), "1.1.1.k")
	f.Add([]byte(`{"a":"\xff","\xff":1}`), "\uFFFD")
	f.Add([]byte(`{"a":[1,2]}`), "a.01")
	f.Add([]byte(`{"a":1e999}`), "a")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		if path == "" || len(doc) > maxRawPathBytes {
			return
		}
		tree, err := decodeTree(doc)
		if err != nil {
			return
		}
		want, wantFound := walkPath(tree, path, true)
		got, found, ok := rawPath(doc, path)
		if !ok {
			return
		}
		if found != wantFound || !reflect.DeepEqual(got, want) {
			t.Fatalf("rawPath(%q, %q) = %#v, %v; walkPath of the tree: %#v, %v", doc, path, got, found, want, wantFound)
		}
	})
}
