package extbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// streamConn is the server end of a connection whose peer has sent stream
// and closed: Read hands it out in the chunk sizes given (cycled), then
// io.EOF. Writes (pongs, close frames) are discarded.
type streamConn struct {
	stream []byte
	chunks []int
	next   int
	// forbid makes Read fail the test: the library must not read the
	// socket while it is set.
	forbid bool
	t      *testing.T
}

func (c *streamConn) Read(p []byte) (int, error) {
	if c.forbid {
		c.t.Fatal("the library read the socket for a frame the gate said was buffered")
	}
	if len(c.stream) == 0 {
		return 0, io.EOF
	}
	n := len(c.stream)
	if len(c.chunks) > 0 {
		n = max(c.chunks[c.next%len(c.chunks)], 1)
		c.next++
	}
	n = copy(p[:min(len(p), n)], c.stream)
	c.stream = c.stream[n:]
	return n, nil
}

func (c *streamConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// hijackable is an http.ResponseWriter that hijacks to conn, with early
// already read past the request by the server.
type hijackable struct {
	*httptest.ResponseRecorder
	conn  net.Conn
	early []byte
}

func (h *hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(h.early), h.conn))
	if len(h.early) > 0 {
		br.Peek(len(h.early))
	}
	return h.conn, bufio.NewReadWriter(br, bufio.NewWriter(h.conn)), nil
}

type wsMessage struct {
	typ  websocket.MessageType
	data []byte
}

// acceptStream upgrades a request over conn, through the hub's frame gate
// when gated, and returns the library's connection and the gate.
func acceptStream(t *testing.T, conn net.Conn, early []byte, gated bool) (*websocket.Conn, *frameGate) {
	req := httptest.NewRequest(http.MethodGet, "/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	var w http.ResponseWriter = &hijackable{ResponseRecorder: httptest.NewRecorder(), conn: conn, early: early}
	var rec *hijackRecorder
	if gated {
		rec = &hijackRecorder{ResponseWriter: w}
		w = rec
	}
	ws, err := websocket.Accept(w, req, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		return ws, rec.gate
	}
	return ws, nil
}

// readAll reads messages until an error. With a gate, before each message
// it asks the gate, as a reading caller does, whether a whole small text
// frame is buffered, and then forbids the library to read the socket while
// it reads that frame.
func readAll(t *testing.T, ws *websocket.Conn, g *frameGate, conn *streamConn, limit int64, awaitMask uint64) ([]wsMessage, error) {
	ws.SetReadLimit(limit)
	var msgs []wsMessage
	turn := &readTurn{gate: g}
	for i := 0; ; i++ {
		if g != nil && awaitMask&(1<<(i%64)) != 0 {
			if g.await(turn) == gateFrame {
				conn.forbid = true
			}
		}
		typ, data, err := ws.Read(context.Background())
		conn.forbid = false
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, wsMessage{typ, data})
	}
}

// errorKind is what the hub makes of a read error (readFailure): the
// message-too-big, close-code and other classes.
func errorKind(err error) string {
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		return "too big"
	case websocket.CloseStatus(err) != -1:
		return fmt.Sprint("close ", websocket.CloseStatus(err))
	case connectionLost(err):
		return "lost"
	default:
		return "protocol"
	}
}

// clientFrame is a masked frame as an extension sends it.
func clientFrame(first byte, payload []byte, key uint32) []byte {
	var b []byte
	b = append(b, first)
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	b = binary.BigEndian.AppendUint32(b, key)
	for i, c := range payload {
		b = append(b, c^byte(key>>(8*(3-i%4))))
	}
	return b
}

// FuzzFrameGate checks that the frame gate changes nothing the library
// reads: the same bytes, split at arbitrary points and partly read by the
// server before the upgrade, yield the same messages and the same error
// through the gate (with a reading caller's look into the gate between
// messages) as through the bare connection, and a frame the gate calls
// buffered is read without touching the socket.
func FuzzFrameGate(f *testing.F) {
	text := clientFrame(0x81, []byte(`{"type":"browser_result","id":"x"}`), 0x01020304)
	big := clientFrame(0x81, bytes.Repeat([]byte("a"), gateSize+10), 0x0a0b0c0d)
	mid := clientFrame(0x81, bytes.Repeat([]byte("b"), 300), 0)
	frag := append(append(append(clientFrame(0x01, []byte("hel"), 7), clientFrame(0x89, []byte("p"), 9)...),
		clientFrame(0x00, []byte("l"), 3)...), clientFrame(0x80, []byte("o"), 5)...)
	closeF := clientFrame(0x88, []byte{0x03, 0xe8, 'b', 'y', 'e'}, 11)
	huge := []byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 'x'}
	seeds := [][]byte{
		text, append(append([]byte{}, text...), text...), big, mid, frag, closeF,
		append(append(append([]byte{}, text...), closeF...), text...),
		append(append([]byte{}, text...), huge...),
		append(append([]byte{}, text...), 0x81, 0xfe, 0x00),                            // a partial header at EOF
		append(append([]byte{}, text...), clientFrame(0xc1, []byte("z"), 1)...),        // RSV1: no compression was negotiated
		append(append([]byte{}, text...), clientFrame(0x82, []byte{0, 1, 2}, 1)...),    // binary
		append(append([]byte{}, text...), text[0], text[1]&0x7f, 'a'),                  // unmasked
		append(append(append([]byte{}, mid...), clientFrame(0x8a, nil, 2)...), mid...), // pong between
	}
	for i, s := range seeds {
		f.Add(s, uint8(i%4), []byte{byte(i + 1), 3, 200}, int64(100+i*1000), uint64(0x5555))
	}
	f.Fuzz(func(t *testing.T, stream []byte, early uint8, chunks []byte, limit int64, awaitMask uint64) {
		if len(stream) > 1<<16 {
			return
		}
		limit = 1 + (limit&0xffff+0xffff)%(1<<15)
		cut := min(int(early), len(stream))
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c)
		}
		run := func(gated bool) ([]wsMessage, error) {
			conn := &streamConn{stream: stream[cut:], chunks: sizes, t: t}
			ws, g := acceptStream(t, conn, stream[:cut], gated)
			defer ws.CloseNow()
			return readAll(t, ws, g, conn, limit, awaitMask)
		}
		want, wantErr := run(false)
		got, gotErr := run(true)
		if len(got) != len(want) {
			t.Fatalf("gated: %d messages (err %v), bare: %d (err %v)", len(got), gotErr, len(want), wantErr)
		}
		for i := range want {
			if got[i].typ != want[i].typ || !bytes.Equal(got[i].data, want[i].data) {
				t.Fatalf("message %d: gated %v %q, bare %v %q", i, got[i].typ, got[i].data, want[i].typ, want[i].data)
			}
		}
		if gotErr.Error() != wantErr.Error() || errorKind(gotErr) != errorKind(wantErr) {
			t.Fatalf("gated error %v (%s), bare %v (%s)", gotErr, errorKind(gotErr), wantErr, errorKind(wantErr))
		}
	})
}
