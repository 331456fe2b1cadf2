package agentproto_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
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
		var res *agentproto.ToolResult
		var err error
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err = agentproto.CallTool(t.Context(), fixedCaller(result), agentproto.ToolSnapshot, nil, nil)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%d-byte result: %d bytes allocated, %d bytes of text", len(result), allocated, len(res.Text))
		assert.Less(t, allocated, uint64(4*len(result)+1<<20), "memory within a small multiple of the result")
		assert.Less(t, len(res.Text), 2*len(result), "levels past 64 written compactly")
		assert.True(t, json.Valid([]byte(res.Text)))
	}
}
