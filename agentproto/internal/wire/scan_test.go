package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanCases are documents for Valid, with the error encoding/json gives
// (or, for the cases where this scanner is stricter, its own).
var scanCases = []struct {
	name, doc string
	wantErr   string // "" for valid JSON
}{
	{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, ""},
	{"white space everywhere", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\n", ""},
	{"empty containers", `[{},[],"",0]`, ""},
	{"numbers", `[0,-0,1.5,-2e10,3E+2,4e-2,123456789012345678901234567890]`, ""},
	{"escapes", `"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"`, ""},
	{"non-ASCII", `"Añadir al carrito ✓ 😀"`, ""},
	{"long string crossing every word size", `"` + strings.Repeat("abcdefgh", 9) + `xyz"`, ""},
	{"quote in the unrolled loop", `["` + strings.Repeat("x", 40) + `","` + strings.Repeat("y", 70) + `"]`, ""},
	{"empty", ``, "unexpected end of JSON input"},
	{"only space", `   `, "unexpected end of JSON input"},
	{"bare word", `nope`, "invalid character 'o' in literal null (expecting 'u')"},
	{"truncated literal", `tru`, "invalid character ' ' in literal true (expecting 'e')"},
	{"trailing garbage", `{} x`, "invalid character 'x' after top-level value"},
	{"two values", `1 2`, "invalid character '2' after top-level value"},
	{"trailing comma in object", `{"a":1,}`, "invalid character '}' looking for beginning of object key string"},
	{"trailing comma in array", `[1,]`, "invalid character ']' looking for beginning of value"},
	{"missing colon", `{"a" 1}`, "invalid character '1' after object key"},
	{"missing comma", `{"a":1 "b":2}`, "invalid character '\"' after object key:value pair"},
	{"array missing comma", `[1 2]`, "invalid character '2' after array element"},
	{"unquoted key", `{a:1}`, "invalid character 'a' looking for beginning of object key string"},
	{"single quotes", `'a'`, "invalid character '\\'' looking for beginning of value"},
	{"unterminated string", `"abc`, "unexpected end of JSON input"},
	{"unterminated long string", `"` + strings.Repeat("x", 100), "unexpected end of JSON input"},
	{"control character", "\"a\tb\"", "invalid character '\\t' in string literal"},
	{"control character after a word", "\"" + strings.Repeat("x", 50) + "\x01\"", "invalid character '\\x01' in string literal"},
	{"bad escape", `"\x"`, "invalid character 'x' in string escape code"},
	{"escape at the end", `"\`, "invalid character ' ' in string escape code"},
	{"unicode escape at the end", `"\u12`, "invalid character ' ' in \\u hexadecimal character escape"},
	{"short unicode escape", `"\u12G4"`, "invalid character 'G' in \\u hexadecimal character escape"},
	{"leading zero", `01`, "invalid character '1' after top-level value"},
	{"bare minus", `-`, "invalid character ' ' in numeric literal"},
	{"minus letter", `-a`, "invalid character 'a' in numeric literal"},
	{"dot without digits", `[1.`, "invalid character ' ' after decimal point in numeric literal"},
	{"dot then letter", `1.e`, "invalid character 'e' after decimal point in numeric literal"},
	{"exponent without digits", `1e+`, "invalid character ' ' in exponent of numeric literal"},
	{"exponent then letter", `1ex`, "invalid character 'x' in exponent of numeric literal"},
	{"unclosed object", `{"a":1`, "unexpected end of JSON input"},
	{"unclosed array", `[1`, "unexpected end of JSON input"},
	{"non-ASCII outside strings", "\u00e9", "invalid character 'Ã' looking for beginning of value"},
	{"control character outside strings", "\x01", "invalid character '\\x01' looking for beginning of value"},
	{"depth at the limit", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), ""},
	// Lone surrogate escapes are valid, as JSON.parse (the reference
	// bridge, the extension) and encoding/json read them.
	{"lone high surrogate escape", `"cut \ud83d"`, ""},
	{"lone low surrogate escape", `{"k\udc00":"\udfff"}`, ""},
	{"surrogates in the wrong order", `["\ude00\ud83d"]`, ""},
	// Stricter than encoding/json, as Chrome is: strings must be UTF-8.
	{"invalid UTF-8 in a string", "\"a\xffb\"", "invalid UTF-8 in string"},
	{"invalid UTF-8 after a word", "\"" + strings.Repeat("x", 40) + "\xc3(\"", "invalid UTF-8 in string"},
	{"depth over the limit", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "exceeded max depth"},
}

func TestValid(t *testing.T) {
	for _, tt := range scanCases {
		t.Run(tt.name, func(t *testing.T) {
			err := Valid([]byte(tt.doc))
			if tt.wantErr == "" {
				assert.NoError(t, err)
				assert.True(t, json.Valid([]byte(tt.doc)), "encoding/json agrees")
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
			var syn *SyntaxError
			assert.ErrorAs(t, err, &syn)
		})
	}
}

// TestValidErrorsMatchEncodingJSON checks the wording against encoding/json
// itself for every case both scanners refuse.
func TestValidErrorsMatchEncodingJSON(t *testing.T) {
	for _, tt := range scanCases {
		if tt.wantErr == "" || !utf8.ValidString(tt.doc) || strings.Contains(tt.wantErr, "max depth") {
			continue
		}
		var v any
		jerr := json.Unmarshal([]byte(tt.doc), &v)
		require.Error(t, jerr, tt.name)
		assert.Equal(t, jerr.Error(), Valid([]byte(tt.doc)).Error(), tt.name)
	}
}

func TestMembers(t *testing.T) {
	type member struct {
		key     string
		escaped bool
		value   string
	}
	tests := []struct {
		name    string
		doc     string
		want    []member
		wantErr string
	}{
		{name: "empty object", doc: ` { } `},
		{name: "values trimmed, order kept", doc: `{ "b" : [1, 2] , "a":"x" ,"c" : {"d":null} }`,
			want: []member{{"b", false, `[1, 2]`}, {"a", false, `"x"`}, {"c", false, `{"d":null}`}}},
		{name: "escaped key left raw", doc: `{"k\u0065y":1}`, want: []member{{`k\u0065y`, true, `1`}}},
		{name: "duplicates reported as they come", doc: `{"a":1,"a":2}`, want: []member{{"a", false, "1"}, {"a", false, "2"}}},
		{name: "not an object", doc: `[1]`, wantErr: ErrNotObject.Error()},
		{name: "invalid non-object", doc: `[1,]`, wantErr: "invalid character ']' looking for beginning of value"},
		{name: "empty", doc: ``, wantErr: "unexpected end of JSON input"},
		{name: "error after a member", doc: `{"a":1,"b":}`, want: []member{{"a", false, "1"}},
			wantErr: "invalid character '}' looking for beginning of value"},
		{name: "trailing garbage after the object", doc: `{"a":1} {}`, wantErr: "invalid character '{' after top-level value"},
		{name: "trailing garbage after an empty object", doc: `{} x`, wantErr: "invalid character 'x' after top-level value"},
		{name: "unclosed", doc: `{"a":1`, want: nil, wantErr: "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it Members
			it.Reset([]byte(tt.doc))
			var got []member
			for it.Next() {
				m := it.Member()
				got = append(got, member{string(m.Key), m.KeyEscaped, string(m.Value)})
			}
			assert.Equal(t, tt.want, got)
			if tt.wantErr == "" {
				assert.NoError(t, it.Err())
			} else {
				require.Error(t, it.Err())
				assert.Equal(t, tt.wantErr, it.Err().Error())
			}
			assert.False(t, it.Next(), "Next stays false once done")
		})
	}
}

func TestMembersAllocatesNothing(t *testing.T) {
	doc := []byte(`{"id":"7","type":"browser.click","payload":{"ref":"@e1"},"token":"t"}`)
	allocs := testing.AllocsPerRun(100, func() {
		var it Members
		it.Reset(doc)
		for it.Next() {
		}
	})
	assert.Zero(t, allocs)
}

func TestUnquote(t *testing.T) {
	for _, lit := range []string{`""`, `"plain"`, `"a\"b"`, `"\u00e9\n\t\\"`, `"\uD83D\uDE00"`, `"\ud800"`} {
		got, ok := Unquote([]byte(lit))
		require.True(t, ok, lit)
		var want string
		require.NoError(t, json.Unmarshal([]byte(lit), &want))
		assert.Equal(t, want, string(got), lit)
	}
	for _, bad := range []string{``, `"`, `abc`, `"abc`, `"\x"`} {
		_, ok := Unquote([]byte(bad))
		assert.False(t, ok, bad)
	}
	plain := []byte(`"no escapes"`)
	got, _ := Unquote(plain)
	assert.Same(t, &plain[1], &got[0], "a literal without escapes is returned in place")
}

func TestUnescapeKey(t *testing.T) {
	var it Members
	it.Reset([]byte(`{"t\u006fken":1,"id":2}`))
	var keys []string
	for it.Next() {
		keys = append(keys, string(UnescapeKey(it.Member())))
	}
	require.NoError(t, it.Err())
	assert.Equal(t, []string{"token", "id"}, keys)
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"<a href=\"x\">&</a>", `"<a href=\"x\">&</a>"`},
		{"\\ \n \r \t \b \f \x00 \x1f", `"\\ \n \r \t \b \f \u0000 \u001f"`},
		{"é ✓ 😀", `"é ✓ 😀"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
	}
	for _, tt := range tests {
		got := AppendString([]byte("prefix:"), tt.in)
		assert.Equal(t, "prefix:"+tt.want, string(got))
		var back string
		require.NoError(t, json.Unmarshal(got[len("prefix:"):], &back))
		assert.Equal(t, strings.ToValidUTF8(tt.in, "\ufffd"), back)
	}
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"1234567890123456789", 1234567890123456789, true},
		{"", 0, false}, {"01", 0, false}, {"-1", 0, false}, {"1.0", 0, false},
		{"12345678901234567890", 0, false}, {"1a", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseUint([]byte(tt.in))
		assert.Equal(t, tt.ok, ok, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		if ok {
			assert.Equal(t, tt.in, string(AppendUint(nil, got)))
		}
	}
}

// FuzzValid checks the scanner against encoding/json. For documents that
// are valid UTF-8 and within MaxDepth the two must agree on validity and
// on the error's wording; for the rest the scanner may only be stricter.
// For objects, Members must also yield encoding/json's members in order.
func FuzzValid(f *testing.F) {
	for _, tt := range scanCases {
		f.Add([]byte(tt.doc))
	}
	for _, seed := range []string{
		`{"id":"7","type":"browser.click","payload":{"ref":"@e1","index":3},"timeoutMs":1e3,"token":"t"}`,
		`{"kind":"bridge:response","id":"1","result":{"ok":true}}`,
		`{"a\u0022b":"\ud83d\ude00","c":[{"d":-0.5E-3}]}`,
		`{"k":"` + strings.Repeat("0123456789abcdef", 5) + `\n"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := Valid(doc)
		jsonOK := json.Valid(doc)
		if err == nil && !jsonOK {
			t.Fatalf("accepted what encoding/json refuses: %q", doc)
		}
		stricter := !utf8.Valid(doc) || (err != nil && err.Error() == "exceeded max depth")
		if !stricter {
			if (err == nil) != jsonOK {
				t.Fatalf("validity differs from encoding/json (ours: %v): %q", err, doc)
			}
			if err != nil {
				var v any
				jerr := json.Unmarshal(doc, &v)
				if jerr.Error() != err.Error() {
					t.Fatalf("error %q, encoding/json %q: %q", err, jerr, doc)
				}
			}
		}
		checkMembers(t, doc, err)
	})
}

// checkMembers compares Members with encoding/json's token stream.
func checkMembers(t *testing.T, doc []byte, validErr error) {
	var it Members
	it.Reset(doc)
	var keys []string
	var values [][]byte
	for it.Next() {
		m := it.Member()
		keys = append(keys, string(UnescapeKey(m)))
		values = append(values, m.Value)
	}
	isObject := validErr == nil && bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{"))
	switch {
	case validErr != nil:
		if it.Err() == nil {
			t.Fatalf("Members accepted an invalid document: %q", doc)
		}
		return
	case !isObject:
		if !errors.Is(it.Err(), ErrNotObject) {
			t.Fatalf("Members on a non-object: %v", it.Err())
		}
		return
	case it.Err() != nil:
		t.Fatalf("Members refused a valid object: %v", it.Err())
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if tok == json.Delim('}') {
			if i != len(keys) {
				t.Fatalf("Members found %d members, encoding/json %d", len(keys), i)
			}
			break
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		if i >= len(keys) || tok.(string) != keys[i] || !bytes.Equal(raw, values[i]) {
			t.Fatalf("member %d: encoding/json has %q: %s", i, tok, raw)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("trailing data after the object: %v", err)
	}
}

func TestUnquoteExact(t *testing.T) {
	tests := []struct {
		lit  string
		want string
		ok   bool
	}{
		{`"s3cret"`, "s3cret", true},
		{`"s3\u0063ret"`, "s3cret", true},
		{`"\ud83d\ude00"`, "\U0001F600", true},
		{`"\ufffd"`, "\ufffd", true},
		{`"\ud800"`, "", false},
		{`"x\udfff"`, "", false},
		{`"\ude00\ud83d"`, "", false},
	}
	for _, tt := range tests {
		got, ok := UnquoteExact([]byte(tt.lit))
		assert.Equal(t, tt.ok, ok, tt.lit)
		assert.Equal(t, tt.want, string(got), tt.lit)
		if tt.ok {
			plain, _ := Unquote([]byte(tt.lit))
			assert.Equal(t, string(plain), string(got), "as Unquote reads it")
		}
	}
}
