package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto/tools"
	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixedCaller answers every command with one result.
type fixedCaller json.RawMessage

func (f fixedCaller) Call(_ context.Context, _ string, _ any, result any) error {
	*result.(*json.RawMessage) = json.RawMessage(f)
	return nil
}

// deepResult is a result nested depth levels deep (the deepest the
// client accepts is 1,000), its bulk at the bottom: json.Indent writes
// 2×depth spaces before each of those members.
func deepResult(depth, size int) []byte {
	b := bytes.Repeat([]byte("["), depth)
	b = append(b, '0')
	for len(b)+depth+2 <= size {
		b = append(b, ",0"...)
	}
	return append(b, bytes.Repeat([]byte("]"), depth)...)
}

// TestToolTextOfADeeplyNestedResult: indenting a result used to cost
// memory with the square of its depth (json.Indent allocated 123 MB for
// the 20 KB result, 6.5 GB for the 1 MiB one).
func TestToolTextOfADeeplyNestedResult(t *testing.T) {
	for _, size := range []int{20 << 10, 1 << 20} {
		result := deepResult(1000, size)
		var res *tools.Result
		var err error
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err = tools.Call(t.Context(), fixedCaller(result), tools.BrowserSnapshot, nil, nil)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d-byte result: %d bytes allocated, %d bytes of text", len(result), allocated, len(res.Text))
		assert.Less(t, allocated, uint64(4*len(result)+1<<20), "memory within a small multiple of the result")
		assert.Less(t, len(res.Text), 2*len(result), "levels past 64 written compactly")
		assert.True(t, json.Valid([]byte(res.Text)))
	}
}

// scriptedCaller answers each command type with its result.
type scriptedCaller map[string]string

func (s scriptedCaller) Call(_ context.Context, typ string, _ any, result any) error {
	res, ok := s[typ]
	if !ok {
		return errors.New("unexpected " + typ)
	}
	*result.(*json.RawMessage) = json.RawMessage(res)
	return nil
}

// TestToolTextsAreTheReferences: each tool's text is the one the
// reference's mcp-server.js gives for the same result, as it reads the
// result in JavaScript (template literals call String(), || falls back on
// any falsy value, JSON.stringify indents by two spaces).
func TestToolTextsAreTheReferences(t *testing.T) {
	tests := []struct {
		name, tool, args string
		results          scriptedCaller
		want             string
	}{
		{"navigate", "browser_navigate", `{"url":"https://a.example/"}`, scriptedCaller{"browser.navigate": `{"ok":true,"tabId":1,"url":"https://a.example/","title":"A \"shop\""}`},
			`Navigated to https://a.example/. Current title: A "shop"`},
		{"navigate, no title", "browser_navigate", `{"url":"https://a.example/"}`, scriptedCaller{"browser.navigate": `{"ok":true}`},
			`Navigated to https://a.example/. Current title: `},
		{"navigate, a number title", "browser_navigate", `{"url":"u"}`, scriptedCaller{"browser.navigate": `{"title":1.50}`},
			`Navigated to u. Current title: 1.5`},
		{"navigate, null result", "browser_navigate", `{"url":"u"}`, scriptedCaller{"browser.navigate": `null`},
			`Navigated to u. Current title: `},
		{"click", "browser_click", `{"index":3}`, scriptedCaller{"browser.click": `{"kind":"action:result","result":{"ok":true}}`},
			`Clicked element. ok`},
		{"click, a status", "browser_click", `{"index":3}`, scriptedCaller{"browser.click": `{"status":"clicked"}`},
			`Clicked element. clicked`},
		{"click, an object status", "browser_click", `{"index":3}`, scriptedCaller{"browser.click": `{"status":{"a":1}}`},
			`Clicked element. [object Object]`},
		{"click, a falsy status", "browser_click", `{"index":3}`, scriptedCaller{"browser.click": `{"status":0}`},
			`Clicked element. ok`},
		{"type", "browser_type", `{"selector":"#q","text":"say \"hi\""}`, scriptedCaller{"browser.type": `{"kind":"action:result","result":{"ok":true}}`},
			`Typed into element: "say "hi"". ok`},
		{"press", "browser_press", `{"key":"Enter"}`, scriptedCaller{"browser.press": `{"status":["a",1,null]}`},
			`Pressed key "Enter". a,1,`},
		{"scroll", "browser_scroll", `{}`, scriptedCaller{"browser.scroll": `{}`}, `Scrolled down. ok`},
		{"scroll up", "browser_scroll", `{"direction":"up"}`, scriptedCaller{"browser.scroll": `{}`}, `Scrolled up. ok`},
		{"snapshot", "browser_snapshot", `{}`, scriptedCaller{"browser.snapshot": `{"b":1E3,"a":"\u003c","1":[]}`},
			"{\n  \"1\": [],\n  \"b\": 1000,\n  \"a\": \"<\"\n}"},
		{"snapshot, a string", "browser_snapshot", `{}`, scriptedCaller{"browser.snapshot": `"text"`}, `"text"`},
		{"extract, a string", "browser_extract", `{}`, scriptedCaller{"browser.extract": `"42 EUR"`}, `42 EUR`},
		{"extract, an object", "browser_extract", `{}`, scriptedCaller{"browser.extract": `{"x":[1,{"y":null}]}`},
			"{\n  \"x\": [\n    1,\n    {\n      \"y\": null\n    }\n  ]\n}"},
		{"captcha, a string", "browser_solve_captcha", `{"type":"pow"}`, scriptedCaller{"browser.solve_captcha": `"solved"`}, `solved`},
		{"captcha, an object", "browser_solve_captcha", `{}`, scriptedCaller{"browser.solve_captcha": `{"ok":false}`}, "{\n  \"ok\": false\n}"},
		{"goal, the done answer", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"done","steps":[{"status":"ok","note":"n"},{"toolCall":{"name":"done","arguments":{"text":"The answer"}}}]}`},
			`The answer`},
		{"goal, an object answer", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"done","steps":[{"toolCall":{"name":"done","arguments":{"answer":{"price":42}}}}]}`},
			`[object Object]`},
		{"goal, extracted objects, an extract step listed twice", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"done","steps":[{"toolCall":{"name":"extract","arguments":{"instruction":"rows"}},"result":{"extracted":{"rows":2}}}]}`},
			"[\n  {\n    \"rows\": 2\n  },\n  {\n    \"rows\": 2\n  }\n]"},
		{"goal failed", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"failed","error":"No LLM configured","steps":[]}`}, `Goal failed: No LLM configured`},
		{"goal failed without an error", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"failed","steps":[]}`}, `Goal failed: Unknown error`},
		{"goal done, nothing said", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"done","goal":"say \"hi\""}`}, `Goal completed successfully: "say "hi""`},
		{"goal still running", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1"}`,
			"tasks.wait": `{"status":"running","goal":"g","modelUsed":"m","steps":[{}]}`},
			"{\n  \"ok\": false,\n  \"status\": \"running\",\n  \"goal\": \"g\",\n  \"answer\": \"\",\n  \"stepCount\": 1,\n  \"modelUsed\": \"m\"\n}"},
		{"goal, the wait found nothing", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `{"id":"t1","status":"idle","goal":"g"}`,
			"tasks.wait": `null`},
			"{\n  \"ok\": false,\n  \"status\": \"idle\",\n  \"goal\": \"g\",\n  \"answer\": \"\",\n  \"stepCount\": 0\n}"},
		{"goal, no task", "weboperator_execute_goal", `{"goal":"g"}`, scriptedCaller{"tasks.start": `null`},
			"{\n  \"ok\": false,\n  \"status\": \"failed\",\n  \"error\": \"Task not found or timed out\"\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tools.Call(t.Context(), tt.results, tt.tool, json.RawMessage(tt.args), nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, res.Text)
			require.NotNil(t, res.Structured)
		})
	}
}

// TestToolStructuredResults: every tool has an output schema, and its
// structured result validates against it.
func TestToolStructuredResults(t *testing.T) {
	shot := `{"kind":"screenshot","dataUrl":"data:image/jpeg;base64,/9j/4A==","tabId":3}`
	results := scriptedCaller{
		"browser.snapshot": `{"kind":"snapshot","snapshot":{"nodes":[]}}`, "browser.navigate": `{"ok":true}`,
		"browser.click": `"clicked"`, "browser.type": `[1,2]`, "browser.press": `null`, "browser.scroll": `3`,
		"browser.screenshot": shot, "browser.extract": `{"kind":"action:result"}`, "browser.solve_captcha": `false`,
		"tasks.start": `{"id":"t1"}`, "tasks.wait": `{"status":"done","steps":[{"result":{"extracted":"x"}}]}`,
	}
	args := map[string]string{"browser_navigate": `{"url":"u"}`, "browser_type": `{"text":"x"}`, "browser_press": `{"key":"a"}`, "weboperator_execute_goal": `{"goal":"g"}`}
	for _, tool := range tools.List() {
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource("out.json", bytes.NewReader(tool.OutputSchema)), tool.Name)
		schema, err := c.Compile("out.json")
		require.NoError(t, err, tool.Name)
		assert.NotEmpty(t, tool.Title, tool.Name)
		res, err := tools.Call(t.Context(), results, tool.Name, json.RawMessage(args[tool.Name]), nil)
		require.NoError(t, err, tool.Name)
		var v any
		require.NoError(t, json.Unmarshal(res.Structured, &v), tool.Name)
		assert.NoError(t, schema.Validate(v), "%s: %s", tool.Name, res.Structured)
	}
	res, err := tools.Call(t.Context(), results, "browser_screenshot", nil, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":{"kind":"screenshot","tabId":3},"image":{"mimeType":"image/jpeg","size":4}}`, string(res.Structured), "no image data twice")

	// A result too deep for an MCP message is left out of the structure.
	deep := strings.Repeat("[", tools.MaxStructuredDepth+1) + strings.Repeat("]", tools.MaxStructuredDepth+1)
	res, err = tools.Call(t.Context(), fixedCaller(deep), "browser_snapshot", nil, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":null,"omitted":"the result nests deeper than 990 levels: the text has it"}`, string(res.Structured))
	shallow := strings.Repeat("[", tools.MaxStructuredDepth) + strings.Repeat("]", tools.MaxStructuredDepth)
	res, err = tools.Call(t.Context(), fixedCaller(shallow), "browser_snapshot", nil, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"result":`+shallow+`}`, string(res.Structured))
}
