package agentproto_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
)

// BenchmarkCallTool measures what the catalogue adds to a command: the
// same browser.type through Client.Call (the floor) and through CallTool
// (strict JSON check, schema validation, mapping), over a real Unix socket
// and OS pipes; and CallTool alone against a Caller that does no I/O.
func BenchmarkCallTool(b *testing.B) {
	args := json.RawMessage(`{"index":3,"text":"wireless keyboard","clear":true}`)
	payload := json.RawMessage(`{"clear":true,"index":3,"text":"wireless keyboard"}`)
	ctx := context.Background()
	b.Run("floor=Client.Call", func(b *testing.B) {
		bb := startBenchBridge(b, agentprototest.Echo)
		defer bb.close()
		c := bb.dial(b)
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
		// CallTool bounds each command when ctx has no deadline: this is
		// the floor with the same deadline.
		bb := startBenchBridge(b, agentprototest.Echo)
		defer bb.close()
		c := bb.dial(b)
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(ctx, agentproto.DefaultToolTimeout)
			var res json.RawMessage
			if err := c.Call(ctx, agentproto.TypeText, payload, &res); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
	})
	b.Run("CallTool", func(b *testing.B) {
		bb := startBenchBridge(b, agentprototest.Echo)
		defer bb.close()
		c := bb.dial(b)
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := agentproto.CallTool(ctx, c, "browser_type", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CallTool/no-io", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := &fakeCaller{}
			if _, err := agentproto.CallTool(ctx, c, "browser_type", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
