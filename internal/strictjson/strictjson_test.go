package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  error // nil: valid; a sentinel; or errSyntax
		path string
	}{
		{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, nil, ""},
		{"space around", " \n\t{ \"a\" : 1 , \"b\" : 2 } \r\n", nil, ""},
		{"scalars", `-0.5e+10`, nil, ""},
		{"string escapes", `"\u00e9\n\"\\\/"`, nil, ""},
		{"duplicate", `{"token":"a","token":"b"}`, ErrDuplicateKey, ""},
		{"case variant", `{"token":"a","Token":"b"}`, ErrCaseVariantKey, ""},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, ErrDuplicateKey, ""},
		{"kelvin sign folds to k", `{"k":1,"` + "\u212a" + `":2}`, ErrCaseVariantKey, ""},
		{"nested duplicate", `{"x":[{"ok":1},{"p":1,"p":2}]}`, ErrDuplicateKey, "/x/1"},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, nil, ""},
		{"trailing comma", `{"a":1,}`, errSyntax, ""},
		{"trailing garbage", `{"a":1} x`, errSyntax, ""},
		{"two values", `1 2`, errSyntax, ""},
		{"empty", ``, errSyntax, ""},
		{"truncated", `{"a":`, errSyntax, ""},
		{"control char in string", "\"a\x01\"", errSyntax, ""},
		{"invalid UTF-8 in string", "{\"a\":\"b\xffc\"}", errSyntax, ""},
		{"invalid UTF-8 in key", "{\"\xc3\":1}", errSyntax, ""},
		{"truncated UTF-8 sequence", "\"\xe2\x82\"", errSyntax, ""},
		{"UTF-8 surrogate half", "\"\xed\xa0\x80\"", errSyntax, ""},
		{"valid UTF-8", "{\"é\":\"€ 𝄞\"}", nil, ""},
		// Escapes of surrogates that are not a pair: encoding/json decodes
		// them as U+FFFD, JavaScript keeps them.
		{"lone high surrogate escape", `"\ud800"`, errSyntax, ""},
		{"lone low surrogate escape", `"\uDC00"`, errSyntax, ""},
		{"high surrogate then text", `"\ud800x"`, errSyntax, ""},
		{"high surrogate then another escape", `"\ud800\u0041"`, errSyntax, ""},
		{"two high surrogates", `"\ud800\ud800"`, errSyntax, ""},
		{"high surrogate then a short escape", `"\ud800\n"`, errSyntax, ""},
		{"lone surrogate escape in a key", `{"\udfff":1}`, errSyntax, ""},
		{"surrogate pair escape", `"\ud834\udd1e"`, nil, ""},
		{"escaped backslash before u", `"\\ud800"`, nil, ""},
		{"bad escape", `"\x"`, errSyntax, ""},
		{"leading zero", `01`, errSyntax, ""},
		{"single quotes", `{'a':1}`, errSyntax, ""},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), errSyntax, ""},
		{"deep but allowed", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in))
			switch tc.err {
			case nil:
				assert.NoError(t, err)
			case errSyntax:
				var se *SyntaxError
				assert.ErrorAs(t, err, &se)
			default:
				assert.ErrorIs(t, err, tc.err)
				var ke *KeyError
				require.ErrorAs(t, err, &ke)
				assert.Equal(t, tc.path, ke.Path)
			}
		})
	}
}

var errSyntax = errors.New("syntax")

func TestCheckManyKeys(t *testing.T) {
	// Past smallObject keys the check switches to a map; both must agree.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&b, `"key%d":%d,`, i, i)
	}
	valid := b.String() + `"last":0}`
	assert.NoError(t, Check([]byte(valid)))
	assert.ErrorIs(t, Check([]byte(b.String()+`"KEY7":0}`)), ErrCaseVariantKey)
	assert.ErrorIs(t, Check([]byte(b.String()+`"key39":0}`)), ErrDuplicateKey)
}

func TestErrorsCarryNoPayload(t *testing.T) {
	secret := "s3cr3t-value"
	err := Check([]byte(`{"token":"` + secret + `","token":"x"}`))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	err = Check([]byte(`{"token":"` + secret + `"`))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	long := strings.Repeat("k", 500)
	err = Check([]byte(`{"` + long + `":1,"` + long + `":2}`))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200)
}

// TestKeyErrorPathIsBounded: the path to a refused key is made of the
// keys above it, which the sender chooses: it is bounded and carries no
// control characters, as the key itself, so an error string (logged, or
// sent back as agentproto's ToolArgumentsError path) cannot carry a large
// payload or rewrite a terminal.
func TestKeyErrorPathIsBounded(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	deep := strings.Repeat(`{"`+strings.Repeat("d", 60)+`":`, MaxDepth-1)
	for name, doc := range map[string]string{
		"long key above":     `{"` + long + `":{"a":1,"a":2}}`,
		"many keys above":    deep + `{"a":1,"a":2}` + strings.Repeat("}", MaxDepth-1),
		"control characters": `{"\u001b[2J\r\n\u0007\u2028\u202e":[{"a":1,"A":2}]}`,
	} {
		err := Check([]byte(doc))
		var ke *KeyError
		require.ErrorAs(t, err, &ke, name)
		assert.LessOrEqual(t, len(ke.Path), maxPathBytes+len("…"), name)
		assert.Less(t, len(err.Error()), 512, name)
		for _, r := range ke.Path {
			assert.True(t, r == '…' || (r >= 0x20 && r != 0x7f && r != '\u2028' && r != '\u202e'), "%s: path %q holds %U", name, ke.Path, r)
		}
	}
	// Short printable paths are kept exactly.
	err := Check([]byte(`{"a b":{"~/é":[0,{"x":1,"x":2}]}}`))
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "/a b/~0~1é/1", ke.Path)
}

type auth struct {
	Token string `json:"token"`
	ID    any    `json:"id"`
	Inner *inner `json:"inner"`
	embedded
}

type inner struct {
	Name string `json:"name"`
}

type embedded struct {
	Mode string `json:"mode"`
}

func TestUnmarshalExactFieldNames(t *testing.T) {
	var a auth
	require.NoError(t, Unmarshal([]byte(`{"token":"t","id":7,"inner":{"name":"n"},"mode":"m","other":1}`), &a))
	assert.Equal(t, auth{Token: "t", ID: 7.0, Inner: &inner{Name: "n"}, embedded: embedded{Mode: "m"}}, a)

	for _, in := range []string{
		`{"Token":"t"}`,
		`{"inner":{"NAME":"n"}}`,
		`{"MODE":"m"}`,
	} {
		var a auth
		err := Unmarshal([]byte(in), &a)
		assert.ErrorIs(t, err, ErrCaseVariantKey, in)
	}

	var list []auth
	err := Unmarshal([]byte(`[{"token":"a"},{"tokeN":"b"}]`), &list)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "/1", ke.Path)

	var m map[string]auth
	assert.ErrorIs(t, Unmarshal([]byte(`{"x":{"Token":"a"}}`), &m), ErrCaseVariantKey)

	// Raw and interface targets take any key spelling.
	var raw map[string]json.RawMessage
	assert.NoError(t, Unmarshal([]byte(`{"x":{"Token":"a"}}`), &raw))

	assert.Error(t, Unmarshal([]byte(`{}`), a))
}

func TestCheckIntoChecksWithoutDecoding(t *testing.T) {
	var a auth
	require.NoError(t, CheckInto([]byte(`{"token":"t","id":7,"inner":{"name":"n"}}`), &a))
	assert.Equal(t, auth{}, a, "CheckInto does not decode")
	assert.ErrorIs(t, CheckInto([]byte(`{"inner":{"NAME":"n"}}`), &a), ErrCaseVariantKey)
	assert.ErrorIs(t, CheckInto([]byte(`{"x":1,"x":2}`), &a), ErrDuplicateKey)
	var se *SyntaxError
	assert.ErrorAs(t, CheckInto([]byte(`{"token":`), &a), &se)
	// Type mismatches are json.Unmarshal's to find, not CheckInto's.
	assert.NoError(t, CheckInto([]byte(`{"token":1}`), &a))
	assert.Error(t, CheckInto([]byte(`{}`), a))
}

func TestFields(t *testing.T) {
	type member struct{ key, value string }
	var got []member
	err := Fields([]byte(` { "a" : 1 , "b\u0063" : {"x":[1, 2]}, "Token":"t" } `), func(k, v []byte) error {
		got = append(got, member{string(k), string(v)})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []member{{"a", "1"}, {"bc", `{"x":[1, 2]}`}, {"Token", `"t"`}}, got)

	assert.NoError(t, Fields([]byte(`{}`), func(k, v []byte) error { t.Fatal("called"); return nil }))
	assert.ErrorIs(t, Fields([]byte(`[1]`), nil), ErrNotObject)
	assert.ErrorIs(t, Fields([]byte(`{"a":1,"a":2}`), nil), ErrDuplicateKey)

	stop := errors.New("stop")
	calls := 0
	err = Fields([]byte(`{"a":1,"b":2}`), func(k, v []byte) error { calls++; return stop })
	assert.Equal(t, stop, err)
	assert.Equal(t, 1, calls)
}

// FuzzCheck compares Check with encoding/json: every document Check accepts
// must be valid JSON, and every valid document without duplicate or
// case-variant keys must be accepted.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{"a":1}`, `{"a":1,"A":2}`, `[{"x":"\u0078"}]`, `"\ud800"`, `-1.5e3`, `{"k":1,"` + "\u212a" + `":2}`,
		`{"a":{"b":{"c":[1,2,{"d":null}]}}}`, `{`, `nul`, `{"a" 1}`,
		`{"\u001b[2J\r\n\u202e":[{"a":1,"A":2}]}`, `{"~/` + strings.Repeat("é", 40) + `":{"x":{"y":1,"y":2}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		// encoding/json accepts invalid UTF-8 and lone surrogate escapes
		// (as U+FFFD); Check refuses them.
		valid := json.Valid(data) && utf8.Valid(data) && !hasLoneSurrogate(data)
		// CheckDuplicates accepts what Check does, and refuses only
		// duplicates beyond that.
		if derr := CheckDuplicates(data); err == nil && derr != nil {
			t.Fatalf("CheckDuplicates(%q) = %v; Check accepted it", data, derr)
		} else if err != nil && derr == nil && !errors.Is(err, ErrCaseVariantKey) {
			t.Fatalf("CheckDuplicates(%q) accepted what Check refused with %v", data, err)
		}
		if err == nil && !valid {
			t.Fatalf("Check accepted invalid JSON %q", data)
		}
		var se *SyntaxError
		if errors.As(err, &se) && valid && se.Msg != "exceeded max depth" {
			t.Fatalf("Check called valid JSON %q malformed: %v", data, err)
		}
		if valid && (err == nil) != refUnique(data) {
			t.Fatalf("Check(%q) = %v; reference uniqueness check disagrees", data, err)
		}
		// A refused key's path is bounded and printable.
		var ke *KeyError
		if errors.As(err, &ke) {
			if len(ke.Path) > maxPathBytes+len("…") || !utf8.ValidString(ke.Path) {
				t.Fatalf("Check(%q): path %q is too long or not UTF-8", data, ke.Path)
			}
			for _, r := range ke.Path {
				if !unicode.IsGraphic(r) {
					t.Fatalf("Check(%q): path %q holds %U", data, ke.Path, r)
				}
			}
		}
	})
}

// hasLoneSurrogate reports whether valid JSON text in valid UTF-8 escapes
// a lone surrogate, by encoding/json, which decodes one as U+FFFD: every
// U+FFFD the text writes itself (the character, or its escape) is first
// replaced by other text, so any U+FFFD left in the decoded strings came
// from a lone surrogate.
func hasLoneSurrogate(data []byte) bool {
	text := strings.ReplaceAll(string(data), "\ufffd", "X")
	text = regexp.MustCompile(`\\u[fF][fF][fF][dD]`).ReplaceAllString(text, `\u0058`)
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
			return true
		}
	}
}

// refUnique is a slow, obviously right duplicate-key check built on
// encoding/json's tokenizer.
func refUnique(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   []string
		key    bool // next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.key {
			for _, prev := range top.keys {
				if strings.EqualFold(prev, k) {
					return false
				}
			}
			top.keys = append(top.keys, k)
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	doc := []byte(`{"id":"req-1","type":"browser.click","payload":{"ref":"@e12","reason":"open details","tabId":123},"timeoutMs":30000,"token":"0123456789abcdef0123456789abcdef"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := Check(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckDuplicates(t *testing.T) {
	assert.NoError(t, CheckDuplicates([]byte(`{"properties":{"id":{},"ID":{},"Id":{}}}`)))
	err := CheckDuplicates([]byte(`{"properties":{"id":{},"\u0069d":{}}}`))
	assert.ErrorIs(t, err, ErrDuplicateKey)
	// Large objects take the map path.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&b, `"k%d":1,"K%d":2,`, i, i)
	}
	b.WriteString(`"k3":3}`)
	assert.ErrorIs(t, CheckDuplicates([]byte(b.String())), ErrDuplicateKey)
	assert.ErrorIs(t, Check([]byte(b.String())), ErrCaseVariantKey)
	// A pooled scanner does not keep the exact-key mode.
	assert.ErrorIs(t, Check([]byte(`{"a":1,"A":2}`)), ErrCaseVariantKey)
	var se *SyntaxError
	require.ErrorAs(t, CheckDuplicates([]byte("\"\xff\"")), &se)
	assert.Equal(t, "invalid UTF-8 in string", se.Msg)
}

// TestUnmarshalRefusesInvalidUTF8: what encoding/json would silently turn
// into U+FFFD is an error.
func TestUnmarshalRefusesInvalidUTF8(t *testing.T) {
	var v struct {
		Name string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte("{\"name\":\"a\xffb\"}"), &v))
	assert.Equal(t, "a\ufffdb", v.Name, "encoding/json replaces")
	err := Unmarshal([]byte("{\"name\":\"a\xffb\"}"), &v)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "invalid UTF-8 in string", se.Msg)
	assert.Equal(t, 10, se.Offset)

	// A lone surrogate escape is refused alike, at the escape.
	require.NoError(t, json.Unmarshal([]byte(`{"name":"a\ud800b"}`), &v))
	assert.Equal(t, "a\ufffdb", v.Name, "encoding/json replaces")
	err = Unmarshal([]byte(`{"name":"a\ud800b"}`), &v)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "invalid UTF-8 in string: lone surrogate escape", se.Msg)
	assert.Equal(t, 10, se.Offset)
}
