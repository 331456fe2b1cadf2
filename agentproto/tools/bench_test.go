package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/internal/testbridge"
	"github.com/agentbridge/agentbridge/agentproto/tools"
)

// BenchmarkCallTool measures what the catalogue adds to a command: the
// same browser.type through Client.Call (the floor) and through Call
// (strict JSON check, schema validation, mapping), over a real Unix socket
// and OS pipes; and Call alone against a Caller that does no I/O.
func BenchmarkCallTool(b *testing.B) {
	args := json.RawMessage(`{"index":3,"text":"wireless keyboard","clear":true}`)
	payload := json.RawMessage(`{"clear":true,"index":3,"text":"wireless keyboard"}`)
	ctx := context.Background()
	b.Run("floor=Client.Call", func(b *testing.B) {
		bb := testbridge.StartBench(b, agentprototest.Echo)
		defer bb.Stop()
		c := bb.DialAgent(b)
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			var res json.RawMessage
			if err := c.Call(ctx, agentproto.TypeText, payload, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor=Client.Call/deadline", func(b *testing.B) {
		// Call bounds each command when ctx has no deadline: this is
		// the floor with the same deadline.
		bb := testbridge.StartBench(b, agentprototest.Echo)
		defer bb.Stop()
		c := bb.DialAgent(b)
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(ctx, tools.DefaultTimeout)
			var res json.RawMessage
			if err := c.Call(ctx, agentproto.TypeText, payload, &res); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	})
	b.Run("Call", func(b *testing.B) {
		bb := testbridge.StartBench(b, agentprototest.Echo)
		defer bb.Stop()
		c := bb.DialAgent(b)
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tools.Call(ctx, c, "browser_type", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Call/no-io", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := &fakeCaller{}
			if _, err := tools.Call(ctx, c, "browser_type", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
