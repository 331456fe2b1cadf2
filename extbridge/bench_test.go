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
// fake extension and its result back, over loopback TCP. Each command
// follows the last at once, so its caller finds the reading turn free and
// reads its own result (readturn.go).
func BenchmarkCommandRoundTrip(b *testing.B) { commandRoundTrip(b, 0, 0) }

// BenchmarkCommandRoundTripProtocol2 is BenchmarkCommandRoundTrip on a
// protocol-2 connection.
func BenchmarkCommandRoundTripProtocol2(b *testing.B) { commandRoundTrip(b, Protocol2, 0) }

// BenchmarkCommandRoundTripAfterPause is BenchmarkCommandRoundTripProtocol2
// with a pause longer than turnIdle before each command (not timed): the
// serve loop has the turn back and hands each result to its caller.
func BenchmarkCommandRoundTripAfterPause(b *testing.B) {
	commandRoundTrip(b, Protocol2, 2*turnIdle)
}

func commandRoundTrip(b *testing.B, proto ProtocolVersion, pause time.Duration) {
	e := newTCPEnv(b, HubOptions{})
	result := &extbridgetest.Result{URL: "https://example.com/", Title: "Example"}
	e.dial(b, extbridgetest.Options{
		Protocol: int(proto),
		Browser:  answer(func(*extbridgetest.Command) *extbridgetest.Result { return result }),
		OnFrame:  func(extbridgetest.Frame) {}, // record nothing
	})
	ctx := context.Background()
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
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

func chatEvents(b *testing.B, proto ProtocolVersion) {
	const batch = 1000
	e := newTCPEnv(b, HubOptions{})
	var received atomic.Int64
	var target atomic.Int64
	done := make(chan struct{}, 1)
	e.dial(b, extbridgetest.Options{Protocol: int(proto), OnFrame: func(f extbridgetest.Frame) {
		if (f.Type == "chat_event" || f.Type == string(EventTextMessageContent)) && received.Add(1) == target.Load() {
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

// BenchmarkBareWebSocketRoundTrip is a floor of the transport alone: a
// 1 KiB message written by the server's end of a plain coder/websocket
// connection over loopback TCP, echoed by the client's reader goroutine, and
// read back by the writer itself.
func BenchmarkBareWebSocketRoundTrip(b *testing.B) {
	srv := floorPair(b, func(data []byte) []byte { return data })
	ctx := context.Background()
	msg := make([]byte, 1024)
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := srv.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := srv.Read(ctx); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportP50(b, durations)
}

// BenchmarkJSONWebSocketRoundTrip is a floor of a command round trip with
// the hub's old goroutine structure: the hub's JSON work without the hub,
// on a plain coder/websocket connection over loopback TCP with the roles
// the hub and the fake extension have. The caller, on the server's end as
// the hub is, encodes a browser_command (a fresh UUID, the default 30 s
// timeout_ms), writes it in place and waits; the client's reader goroutine
// decodes it and encodes the browser_result the fake extension sends; the
// server's one reader goroutine decodes that and hands it to the caller on
// a channel. The hub still does that when its serve loop holds the reading
// turn (BenchmarkCommandRoundTripAfterPause).
func BenchmarkJSONWebSocketRoundTrip(b *testing.B) { jsonRoundTrip(b, true, 0) }

// BenchmarkJSONWebSocketRoundTripCallerReads is BenchmarkJSONWebSocketRoundTrip
// with the caller reading its own reply: no reader goroutine, no hand-off.
// The floor of the round-trip goal: a caller of the hub that finds the
// reading turn free does the same.
func BenchmarkJSONWebSocketRoundTripCallerReads(b *testing.B) { jsonRoundTrip(b, false, 0) }

// BenchmarkJSONWebSocketRoundTripAfterPause and
// BenchmarkJSONWebSocketRoundTripCallerReadsAfterPause are the two floors
// with BenchmarkCommandRoundTripAfterPause's pause before each command.
func BenchmarkJSONWebSocketRoundTripAfterPause(b *testing.B) { jsonRoundTrip(b, true, 2*turnIdle) }

func BenchmarkJSONWebSocketRoundTripCallerReadsAfterPause(b *testing.B) {
	jsonRoundTrip(b, false, 2*turnIdle)
}

func jsonRoundTrip(b *testing.B, handOff bool, pause time.Duration) {
	srv := floorPair(b, floorAnswer)
	ctx := context.Background()
	read := func() (*resultFrame, error) {
		_, data, err := srv.Read(ctx)
		if err != nil {
			return nil, err
		}
		res := new(resultFrame)
		return res, json.Unmarshal(data, res)
	}
	var results chan *resultFrame
	if handOff {
		results = make(chan *resultFrame, 1)
		go func() {
			for {
				res, err := read()
				if err != nil {
					return
				}
				results <- res
			}
		}()
	}
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		start := time.Now()
		cmd, _ := json.Marshal(commandFrame{Type: typeCommand, ID: uuid.New(), Action: "click", Selector: "button.submit", TimeoutMS: 30000})
		if err := srv.Write(ctx, websocket.MessageText, cmd); err != nil {
			b.Fatal(err)
		}
		if handOff {
			<-results
		} else if _, err := read(); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	reportP50(b, durations)
}

// floorAnswer does the fake extension's work for a command: it decodes the
// browser_command and encodes the browser_result commandRoundTrip answers.
func floorAnswer(data []byte) []byte {
	var cmd extbridgetest.Command
	if json.Unmarshal(data, &cmd) != nil {
		return nil
	}
	res := extbridgetest.Result{URL: "https://example.com/", Title: "Example"}
	res.Type, res.ID = "browser_result", cmd.ID
	out, _ := json.Marshal(&res)
	return out
}

// floorPair connects a plain coder/websocket client to a plain server over
// loopback TCP, as the fake extension connects to the hub, and returns the
// server's end. The client's reader goroutine answers each text message
// with answer's (nil ends the connection), in place.
func floorPair(b *testing.B, answer func([]byte) []byte) *websocket.Conn {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	accepted := make(chan *websocket.Conn, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c // hijacked: the connection outlives the handler
	})}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	client, _, err := websocket.Dial(context.Background(), "ws://"+l.Addr().String(), &websocket.DialOptions{
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	})
	require.NoError(b, err)
	b.Cleanup(func() { client.CloseNow() })
	go func() {
		for {
			_, data, err := client.Read(context.Background())
			if err != nil {
				return
			}
			out := answer(data)
			if out == nil || client.Write(context.Background(), websocket.MessageText, out) != nil {
				return
			}
		}
	}()
	server := <-accepted
	b.Cleanup(func() { server.CloseNow() })
	return server
}
