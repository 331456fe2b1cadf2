package webagents

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/strictjson"
)

// oracleDecodeBatch is DecodeBatch as it was before the hand-written walk:
// strictjson.Unmarshal into a wireBatch by reflection, and the regexp
// check of operation ids. The walk must agree with it on every body, in
// the batch and in the error.
func oracleDecodeBatch(body []byte) (*Batch, error) {
	var w wireBatch
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return nil, decodeError(err)
	}
	if w.Version == nil {
		return nil, errorf(CodeInvalidRequest, `The batch needs "version": "0.1".`)
	}
	if *w.Version != Version {
		return nil, errorf(CodeUnsupportedVersion, `Only version "0.1" is supported.`)
	}
	if w.Operations == nil || len(*w.Operations) == 0 {
		return nil, errorf(CodeInvalidRequest, "The batch needs at least one operation.")
	}
	ops := *w.Operations
	if len(ops) > MaxOperationsLimit {
		return nil, errorf(CodeTooManyOperations, fmt.Sprintf("A batch holds at most %d operations.", MaxOperationsLimit))
	}
	b := &Batch{Version: Version, Operations: make([]Operation, len(ops))}
	if w.Pacing != nil {
		p, err := w.Pacing.pacing()
		if err != nil {
			return nil, err
		}
		b.Pacing = p
	}
	for i := range ops {
		tree, err := oracleDecodeOperation(&ops[i], &b.Operations[i], b.Operations[:i])
		if err != nil {
			return nil, err
		}
		if tree != nil {
			if b.refTrees == nil {
				b.refTrees = make([]decodedInput, len(ops))
			}
			b.refTrees[i] = decodedInput{raw: b.Operations[i].Input, tree: tree}
		}
	}
	return b, nil
}

var oracleOpIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func oracleValidOpID(id string) bool {
	return id != "" && len(id) <= MaxOperationIDChars && oracleOpIDPattern.MatchString(id)
}

func oracleDecodeOperation(w *wireOperation, op *Operation, earlier []Operation) (tree any, err error) {
	if w.ID == nil || !oracleValidOpID(*w.ID) {
		return nil, errorf(CodeInvalidRequest, "Each operation needs an id matching ^[A-Za-z][A-Za-z0-9_-]*$ (at most 64 characters).")
	}
	op.ID = *w.ID
	for i := range earlier {
		if earlier[i].ID == op.ID {
			return nil, opErrorf(CodeInvalidRequest, op.ID, "Operation ids must be unique.")
		}
	}
	switch {
	case w.Action != nil && w.Name != nil && *w.Action != *w.Name:
		return nil, opErrorf(CodeInvalidRequest, op.ID, `"action" and "name" disagree.`)
	case w.Action != nil:
		op.Action = *w.Action
	case w.Name != nil:
		op.Action = *w.Name
	default:
		return nil, opErrorf(CodeInvalidRequest, op.ID, "The operation needs an action.")
	}
	if op.Input, tree, err = operationInput(op.ID, bytes.TrimSpace(w.Input)); err != nil {
		return nil, err
	}
	if w.DependsOn != nil {
		deps := *w.DependsOn
		if len(deps) > MaxOperationsLimit {
			return nil, opErrorf(CodeInvalidRequest, op.ID, fmt.Sprintf("dependsOn lists at most %d ids.", MaxOperationsLimit))
		}
		for i, d := range deps {
			for _, e := range deps[:i] {
				if d == e {
					return nil, opErrorf(CodeInvalidRequest, op.ID, "dependsOn repeats an id.")
				}
			}
		}
		op.DependsOn = deps
	}
	return tree, nil
}

// sameDecoding fails t unless DecodeBatch and the oracle agree on body.
func sameDecoding(t *testing.T, body []byte) {
	t.Helper()
	orig := bytes.Clone(body)
	got, gotErr := DecodeBatch(body)
	want, wantErr := oracleDecodeBatch(body)
	if !bytes.Equal(body, orig) {
		t.Fatalf("DecodeBatch changed its body")
	}
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("body %q: error %v, oracle %v", body, gotErr, wantErr)
	}
	if gotErr != nil {
		g, w := gotErr.(*Error), wantErr.(*Error)
		if *g != *w {
			t.Fatalf("body %q: error %+v, oracle %+v", body, *g, *w)
		}
		if got != nil {
			t.Fatalf("body %q: a batch and an error", body)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q:\n got %#v\nwant %#v", body, got, want)
	}
	// The batch does not alias the body.
	for i := range body {
		body[i] = 'X'
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("body %q: the batch aliases the body", orig)
	}
	copy(body, orig)
}

// batchCorpus are bodies that reach each branch of DecodeBatch.
var batchCorpus = []string{
	specBatch,
	``, ` `, `null`, ` null `, `[]`, `[{}]`, `"x"`, `1`, `true`, `{`, `{}`, `{"version":`,
	`{"version":"0.1","version":"0.1"}`,
	`{"version":"0.1","Version":"0.1"}`,
	`{"version":"0.1","ver\u017fion":"0.1"}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"q":"\ud800"}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"q":"\udbff\udfff\ud834"}}]}`,
	`{"version":"0.1","operations":[{"id":"a\udc00","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"q":"\ud834\udd1e","$ref":"\ud800"}}]}`,
	`{"vers\u0069on":"0.1","operations":[{"\u0069d":"a","action":"a"}]}`,
	`{"version":null,"operations":[{"id":"a","action":"a"}]}`,
	`{"version":1,"operations":[{"id":"a","action":"a"}]}`,
	`{"version":{"a":[1]},"operations":[{"id":"a","action":"a"}]}`,
	`{"version":["0.1"],"operations":[{"id":"a","action":"a"}]}`,
	`{"version":false,"operations":[{"id":"a","action":"a"}]}`,
	`{"version":"0.2","operations":{"Id":1}}`,
	`{"version":"0.1","operations":"x"}`,
	`{"version":"0.1","operations":1}`,
	`{"version":"0.1","operations":{}}`,
	`{"version":"0.1","operations":null}`,
	`{"version":"0.1","operations":[]}`,
	`{"version":"0.1","operations":[null]}`,
	`{"version":"0.1","operations":[1]}`,
	`{"version":"0.1","operations":["x"]}`,
	`{"version":"0.1","operations":[[]]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"},2]}`,
	`{"version":"0.1","operations":[{"ID":"a","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","Input":{}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"Id":1,"ID":2}}]}`,
	`{"version":"0.1","operations":[{"id":1,"action":2}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":2}]}`,
	`{"version":"0.1","operations":[{"id":"a","name":[]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":{}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":[1]}],"version":2}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":[null]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":[null,""]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":[]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":null}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"},{"id":"b","action":"b","dependsOn":["a","a"]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":["b","c"]},{"id":"b","action":"b","dependsOn":["a"]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","dependsOn":["\u0062"]}]}`,
	`{"version":"0.1","operations":[{"id":null,"action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":null,"name":"n"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"x","name":"y"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"x","name":"x"}]}`,
	`{"version":"0.1","operations":[{"id":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"\u00e9\ud800\"\\"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":null}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":"x"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":[1,{"$ref":2}]}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":  { "x" : [ 1 , 2 ] }  }]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"x":{"$ref":1}}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"x":{"\u0024ref":"b"}}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"x":{"$ref":1,"y":2}}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a","input":{"x":"\u00e9 \\ \" } ] {"}}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"},{"id":"a","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"1a","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a-b_C9","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a.b","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a\n","action":"a"}]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":null}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":1}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":[]}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":120,"maxConcurrency":2}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":-1e3,"maxConcurrency":64,"x":{}}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":"1"}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"minIntervalMs":null,"maxConcurrency":1.5}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"pacing":{"MaxConcurrency":1}}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}],"x":{"y":[1,"]"]},"z":-0.5e+3}`,
	`{"version":"0.1","operations":[{"id":"a","action":"a"}]}{}`,
	"{\"version\":\"0.1\",\"operations\":[{\"id\":\"a\",\"action\":\"\xff\"}]}",
	"\t{\r\n\"version\" :\"0.1\" , \"operations\" : [ { \"id\" : \"a\" , \"action\" : \"a\" } ] }\n",
}

func TestDecodeBatchMatchesOracle(t *testing.T) {
	for _, body := range batchCorpus {
		sameDecoding(t, []byte(body))
	}
	many := func(n int, tail string) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf(`{"id":"o%d","action":"a","input":{"i":%d},"dependsOn":[]}`, i, i)
		}
		return ops(list...) + tail
	}
	deps := func(n int, last string) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf(`"d%d"`, i)
		}
		ids[n-1] = last
		return `[` + strings.Join(ids, ",") + `]`
	}
	for _, n := range []int{MaxOperationsLimit, MaxOperationsLimit + 1, 500} {
		for _, last := range []string{`"d0"`, `null`, `"x"`, `1`, `{}`} {
			sameDecoding(t, []byte(ops(`{"id":"a","action":"a","dependsOn":`+deps(n, last)+`}`)))
			// In an operation past the limit, too.
			past := strings.Replace(many(40, ""), `"id":"o39","action":"a","input":{"i":39},"dependsOn":[]`,
				`"id":"o39","action":"a","dependsOn":`+deps(n, last), 1)
			if past == many(40, "") {
				t.Fatal("the 40th operation was not replaced")
			}
			sameDecoding(t, []byte(past))
		}
	}
	sameDecoding(t, []byte(many(32, "")))
	sameDecoding(t, []byte(many(33, "")))
	// A type error in the 40th operation wins over "too many".
	sameDecoding(t, []byte(strings.Replace(many(40, ""), `"id":"o39"`, `"id":39`, 1)))
	sameDecoding(t, []byte(ops(`{"id":"a","action":"a","input":{"s":"`+strings.Repeat("é", MaxInputChars)+`"}}`)))
	sameDecoding(t, []byte(ops(`{"id":"a","action":"a","input":{"s":"`+strings.Repeat("é", MaxInputChars/2-8)+`"}}`)))
	sameDecoding(t, []byte(ops(`{"id":"a`+strings.Repeat("b", 63)+`","action":"a"}`)))
	sameDecoding(t, []byte(ops(`{"id":"a`+strings.Repeat("b", 64)+`","action":"a"}`)))
	sameDecoding(t, []byte(`{"version":"0.1","operations":[{"id":"a","action":"a","input":`+strings.Repeat("[", 1001)+strings.Repeat("]", 1001)+`}]}`))
}

func FuzzDecodeBatchMatchesOracle(f *testing.F) {
	for _, body := range batchCorpus {
		f.Add([]byte(body))
	}
	// dependsOn just past the limit, with a repeat and a wrong type.
	f.Add([]byte(ops(`{"id":"a","action":"a","dependsOn":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y","z","A","B","C","D","E","F","a",1]}`)))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameDecoding(t, body)
	})
}

func TestValidOpIDMatchesRegexp(t *testing.T) {
	// Every string of up to three bytes from an alphabet with each class
	// and its edges, then ids around the length limit.
	alphabet := "aAzZ09_-.@[`{/:\x00\x7f\xc3\xa9 "
	var check func(prefix string, n int)
	check = func(prefix string, n int) {
		if got, want := validOpID(prefix), oracleValidOpID(prefix); got != want {
			t.Fatalf("validOpID(%q) = %v, the regexp says %v", prefix, got, want)
		}
		if n == 0 {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			check(prefix+alphabet[i:i+1], n-1)
		}
	}
	check("", 3)
	for _, n := range []int{63, 64, 65} {
		id := "a" + strings.Repeat("Z", n-1)
		if validOpID(id) != oracleValidOpID(id) {
			t.Fatalf("validOpID of %d characters disagrees with the regexp", n)
		}
	}
	// Every single byte, first and later.
	for c := 0; c < 256; c++ {
		for _, id := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)})} {
			if validOpID(id) != oracleValidOpID(id) {
				t.Fatalf("validOpID(%q) disagrees with the regexp", id)
			}
		}
	}
}

func FuzzValidOpIDMatchesRegexp(f *testing.F) {
	f.Add("a-b_9")
	f.Add("9a")
	f.Fuzz(func(t *testing.T, id string) {
		if validOpID(id) != oracleValidOpID(id) {
			t.Fatalf("validOpID(%q) disagrees with the regexp", id)
		}
	})
}
