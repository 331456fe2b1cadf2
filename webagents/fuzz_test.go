package webagents

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func FuzzFencedBlocks(f *testing.F) {
	f.Add([]byte("```webagents\n{}\n```\n"))
	f.Add([]byte("# x\n~~~WebAgents-JSON\n{\"a\":1}\n~~~~\n```webagents\n"))
	f.Add([]byte("````md\n```webagents\n{}\n```\n````\n"))
	f.Add([]byte("   ```webagents \r\n{}\r\n   ```\r\n"))
	f.Add([]byte("``` webagents`\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		blocks, _ := fencedBlocks(doc)
		for _, b := range blocks {
			if len(b) > len(doc) {
				t.Fatalf("block longer than the document")
			}
			if !bytes.Contains(doc, b) {
				t.Fatalf("block is not a slice of the document")
			}
		}
	})
}

func FuzzParseDocument(f *testing.F) {
	f.Add(specManifestJSON(f), false)
	f.Add([]byte("```webagents\n"+string(specManifestJSON(f))+"\n```\n"), true)
	f.Add([]byte(`{"version":0.1,"workflow":{"endpoint":"//x"},"actions":{"a":{"inputSchema":{"$ref":"file:///etc/passwd"}}}}`), true)
	f.Add([]byte(`{"version":"0.1","workflow":{"endpoint":"/e","parallel":false,"pacing":{"maxConcurrency":3}},"actions":{"a":{"inputSchema":{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}}}}`), false)
	f.Add([]byte(chainManifest(3)), false)
	f.Add([]byte(`{"version":"0.1","workflow":{"endpoint":"/e"},"actions":{"a":{"description":"`+"```"+`","inputSchema":{"anyOf":[{"items":{"$ref":"#"}},{"$dynamicRef":"#x","$dynamicAnchor":"x"}]}}}}`), false)
	f.Fuzz(func(t *testing.T, doc []byte, strict bool) {
		m, err := ParseDocument(doc, &ParseOptions{Strict: strict, BaseURL: "https://shop.example/p"})
		if err != nil {
			if m != nil {
				t.Fatal("manifest and error")
			}
			return
		}
		// A valid manifest renders to documents that parse to the same workflow.
		js, err := m.JSONDocument()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseDocument(js, &ParseOptions{Strict: true})
		if err != nil {
			t.Fatalf("rendered manifest does not parse: %v", err)
		}
		if again.Workflow != m.Workflow || len(again.Actions) != len(m.Actions) {
			t.Fatal("round trip changed the manifest")
		}
		md, err := m.MarkdownDocument()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseDocument(md, &ParseOptions{Strict: true}); err != nil {
			t.Fatalf("rendered markdown does not parse: %v", err)
		}
		_ = m.ActionsFor("/p")
	})
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte(specBatch))
	f.Add([]byte(`{"version":"0.1","operations":[{"id":"a","name":"r","input":{"x":[{"$ref":"b.0"}]},"dependsOn":["b"]},{"id":"b","action":"w"}],"pacing":{"minIntervalMs":5}}`))
	f.Add([]byte(`{"version":"0.1","operations":[{"id":"a","action":"r","input":{"\u0024ref":"a"}}]}`))
	f.Add([]byte(`{"version":"0.1","operations":[{"id":"a","action":"s","input":{"q":1}}]}`))
	f.Add([]byte(`{"version":"0.1","operations":[{"id":"a","action":"r","dependsOn":["b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y","z","A","B","C","D","E","F","G","H"]}]}`))
	f.Add([]byte(`{"version":"0.1","operations":[{"id":"a","action":"r","input":{"\u001b[2J\u202e":{"x":1,"X":2}}}]}`))
	m := rwManifest(f, "")
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := DecodeBatch(body)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error", err)
			}
			return
		}
		p, err := NewPlan(m, "", b)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("plan error %T is not *Error", err)
			}
			return
		}
		// The plan is acyclic: every operation's dependencies come from the batch
		// and no operation (transitively) depends on itself.
		anc, ok := p.ancestors()
		if !ok {
			t.Fatal("planned graph has a cycle")
		}
		for i := range anc {
			if anc[i]&(1<<i) != 0 {
				t.Fatal("self-dependency")
			}
		}
	})
}

func FuzzReference(f *testing.F) {
	f.Add("find.results.0.id", []byte(`{"results":[{"id":"x"}]}`))
	f.Add("a", []byte(`null`))
	f.Add("a.01", []byte(`[1,2]`))
	f.Add("a..b", []byte(`{}`))
	f.Add("a.b.", []byte(`{"b":{}}`))
	f.Add(".b", []byte(`{"b":1}`))
	f.Fuzz(func(t *testing.T, ref string, result []byte) {
		// resolveReference is ParseReference and Resolve without allocating.
		var tree any
		if tree, _ = decodeTree(result); tree == nil {
			tree = map[string]any{}
		}
		got, gotOK := resolveReference(ref, treeSource(func(string) any { return tree }))
		r, ok := ParseReference(ref)
		var want any
		wantOK := false
		if ok {
			want, wantOK = r.Resolve(tree)
		}
		if gotOK != wantOK || (gotOK && !reflect.DeepEqual(got, want)) {
			t.Fatalf("resolveReference(%q) = %v, %v; ParseReference and Resolve: %v, %v", ref, got, gotOK, want, wantOK)
		}
		if !ok {
			return
		}
		if r.String() != ref {
			t.Fatalf("String() = %q, want %q", r.String(), ref)
		}
		var v any
		if json.Unmarshal(result, &v) != nil {
			return
		}
		_, _ = r.Resolve(v)
		input, _ := json.Marshal(map[string]any{"v": map[string]any{"$ref": ref}})
		_, _, _ = resolveInput(input, nil, func(string) any { return v })
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"ok":true,"protocol":"webagents/0.1","pacing":{"minIntervalMs":120,"maxConcurrency":2},"results":{"a":{"x":1},"A":[1]}}`))
	f.Add([]byte(`{"ok":false,"protocol":"webagents/0.1","pacing":{"minIntervalMs":0,"maxConcurrency":1},"error":"Sign in first.","code":"unauthorized","operation":"add","results":{},"errors":{"add":{"code":"unauthorized","message":"Sign in first.","status":401}},"skipped":["v"]}`))
	f.Add([]byte(`{"ok":false,"OK":true}`))
	f.Add([]byte(`{"results":{"a":1,"a":2}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, err := decodeResponse(raw, nil)
		if err != nil {
			return
		}
		// What was accepted re-encodes to an envelope that decodes the same.
		again, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		env2, err := decodeResponse(again, nil)
		if err != nil {
			t.Fatalf("re-encoded envelope refused: %v", err)
		}
		if env2.OK != env.OK || env2.Code != env.Code || len(env2.Results) != len(env.Results) || len(env2.Errors) != len(env.Errors) {
			t.Fatal("round trip changed the envelope")
		}
	})
}
