package webagents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsLengths pairs JSON texts with JSON.stringify(JSON.parse(text)).length
// as Node.js 20 computed it (the originating client measures schemas so).
var jsLengths = []struct {
	text string
	want int
}{
	{"0", 1},
	{"-0", 1},
	{"1", 1},
	{"-1", 2},
	{"1.0", 1},
	{"1.50", 3},
	{"0.1", 3},
	{"-0.5", 4},
	{"1e20", 21},
	{"1e21", 5},
	{"1e-6", 8},
	{"1e-7", 4},
	{"123e-9", 7},
	{"1.5e-7", 6},
	{"123456789012345678901234", 22},
	{"1e308", 6},
	{"1e309", 4},
	{"-1e400", 4},
	{"1e-400", 1},
	{"5e-324", 6},
	{"1.7976931348623157e308", 23},
	{"0.000001", 8},
	{"0.0000001", 4},
	{"100", 3},
	{"1E2", 3},
	{"12.34e1", 5},
	{"9007199254740993", 16},
	{"0.1e1", 1},
	{"2.5e+25", 7},
	{"-2.5e-25", 8},
	{"4.35", 4},
	{"0.3", 3},
	{"1e0", 1},
	{"123456789.123456789", 18},
	{"\"\"", 2},
	{"\"a\"", 3},
	{"\"\\u0000\"", 8},
	{"\"\\b\\f\\n\\r\\t\"", 12},
	{"\"\\u001f\\u007f\"", 9},
	{"\"\\\"\\\\\"", 6},
	{"\"\\/\"", 3},
	{"\"\u2028\u2029\"", 4},
	{"\"é€\"", 4},
	{"\"\\ud834\\udd1e\"", 4},
	{"\"😀\"", 4},
	{"\"<&>\"", 5},
	{"null", 4},
	{"true", 4},
	{"false", 5},
	{"[]", 2},
	{"{}", 2},
	{"[1,2,3]", 7},
	{"[[],{}]", 7},
	{"{\"a\":1}", 7},
	{"{\"a\":1,\"b\":[true,null]}", 23},
	{"{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"maxLength\":1e2,\"minLength\":1.0}},\"required\":[\"q\"],\"additionalProperties\":false}", 130},
	{"{\"enum\":[1e20,1e21,1.5e-7,-0,\"\\u2028\",\"😀\"]}", 56},
	{"{\"2\":1,\"1\":2,\"__proto__\":3}", 27},
	{" { \"a\" : [ 1 , 2 ] } ", 11},
}

func TestJSJSONLengthMatchesJavaScript(t *testing.T) {
	for _, tt := range jsLengths {
		v, err := decodeTree([]byte(tt.text))
		require.NoError(t, err, tt.text)
		assert.Equal(t, tt.want, jsJSONLength(v), "%s", tt.text)
	}
}
