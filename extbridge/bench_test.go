package extbridge

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
	"github.com/agentbridge/agentbridge/internal/uuid"
)

// reportP50 reports the median of the per-operation durations in µs.
func reportP50(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
}

// BenchmarkCommandRoundTrip measures a browser command from the hub to the
// fake extension and its result back, over loopback TCP.
func BenchmarkCommandRoundTrip(b *testing.B) { commandRoundTrip(b, 0) }

// BenchmarkCommandRoundTripProtocol2 is BenchmarkCommandRoundTrip on a
// protocol-2 connection.
func BenchmarkCommandRoundTripProtocol2(b *testing.B) { commandRoundTrip(b, Protocol2) }

func commandRoundTrip(b *testing.B, proto int) {
	e := newTCPEnv(b, HubOptions{})
	result := &extbridgetest.Result{URL: "https://example.com/", Title: "Example"}
	e.dial(b, extbridgetest.Options{
		Protocol: proto,
		Browser:  answer(func(*extbridgetest.Command) *extbridgetest.Result { return result }),
		OnFrame:  func(extbridgetest.Frame) {}, // record nothing
	})
	ctx := context.Background()
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := e.hub.Click(ctx, "button.submit"); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportP50(b, durations)
}

// BenchmarkChatEvents measures AG-UI events mirrored to one connection: each
// operation emits a batch of 1000 TEXT_MESSAGE_CONTENT events and waits until
// the fake extension has read them all.
func BenchmarkChatEvents(b *testing.B) { chatEvents(b, 0) }

// BenchmarkChatEventsProtocol2 is BenchmarkChatEvents on a protocol-2
// connection (bare event frames).
func BenchmarkChatEventsProtocol2(b *testing.B) { chatEvents(b, Protocol2) }

func chatEvents(b *testing.B, proto int) {
	const batch = 1000
	e := newTCPEnv(b, HubOptions{})
	var received atomic.Int64
	var target atomic.Int64
	done := make(chan struct{}, 1)
	e.dial(b, extbridgetest.Options{Protocol: proto, OnFrame: func(f extbridgetest.Frame) {
		if (f.Type == "chat_event" || f.Type == EventTextMessageContent) && received.Add(1) == target.Load() {
			done <- struct{}{}
		}
	}})
	ctx := context.Background()
	ev := TextMessageContent("msg-1", "a token or two of streamed text")
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		target.Add(batch)
		for range batch {
			if err := e.hub.Emit(ctx, ev); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		n++
	}
	b.ReportMetric(float64(n*batch)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkBareWebSocketRoundTrip is the floor to compare with: a 1 KiB
// message echoed by a plain coder/websocket server over loopback TCP.
func BenchmarkBareWebSocketRoundTrip(b *testing.B) {
	c := floorServer(b, func(data []byte) []byte { return data })
	ctx := context.Background()
	msg := make([]byte, 1024)
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportP50(b, durations)
}

// BenchmarkJSONWebSocketRoundTrip is the floor for a command round trip
// doing the same JSON work as the hub and the fake extension, without the
// hub: the client encodes a browser_command, the server (a plain
// coder/websocket server) decodes it and encodes a browser_result, and the
// client decodes that, over loopback TCP.
func BenchmarkJSONWebSocketRoundTrip(b *testing.B) {
	c := floorServer(b, func(data []byte) []byte {
		var cmd extbridgetest.Command
		if json.Unmarshal(data, &cmd) != nil {
			return nil
		}
		res, _ := json.Marshal(&extbridgetest.Result{Type: "browser_result", ID: cmd.ID, URL: "https://example.com/", Title: "Example"})
		return res
	})
	ctx := context.Background()
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		cmd, _ := json.Marshal(commandFrame{Type: typeCommand, ID: uuid.New(), Action: "click", Selector: "button.submit", TimeoutMS: 30000})
		if err := c.Write(ctx, websocket.MessageText, cmd); err != nil {
			b.Fatal(err)
		}
		_, data, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var res resultFrame
		if err := json.Unmarshal(data, &res); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportP50(b, durations)
}

// floorServer serves a plain coder/websocket server on loopback TCP that
// answers each text message with answer's (nil ends the connection), and
// returns a client connected to it.
func floorServer(b *testing.B, answer func([]byte) []byte) *websocket.Conn {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				return
			}
			out := answer(data)
			if out == nil || c.Write(context.Background(), websocket.MessageText, out) != nil {
				return
			}
		}
	})}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	c, _, err := websocket.Dial(context.Background(), "ws://"+l.Addr().String(), &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	})
	require.NoError(b, err)
	b.Cleanup(func() { c.CloseNow() })
	return c
}
