package extbridge

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/extbridge/extbridgetest"
)

// noDeadlineListener's connections cannot have deadlines, as some
// in-memory transports cannot.
type noDeadlineListener struct{ net.Listener }

type noDeadlineConn struct{ net.Conn }

var errNoDeadline = errors.New("deadlines not supported")

func (l noDeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return noDeadlineConn{c}, nil
}

func (noDeadlineConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (noDeadlineConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (noDeadlineConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

// On a socket that cannot have a read deadline nothing could interrupt a
// caller waiting for bytes: a cancelled command must still return at once,
// so callers never read such a socket.
func TestCallerNeverReadsWithoutDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvOn(t, HubOptions{}, func(l net.Listener) net.Listener { return noDeadlineListener{l} })
		ext := e.dial(extbridgetest.Options{})
		c := e.hub.cur.Load()
		require.NotNil(t, c)
		errc, cmd := readInFlight(t, e, ext)
		require.NoError(t, ext.Reply(t.Context(), cmd.ID, &extbridgetest.Result{Content: "first"}))
		require.NoError(t, <-errc)
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		second := make(chan error, 1)
		go func() {
			_, err := e.hub.Read(ctx, "")
			second <- err
		}()
		_, err := ext.NextCommand(t.Context())
		require.NoError(t, err)
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case err := <-second:
			assert.ErrorIs(t, err, context.Canceled)
		default:
			t.Fatal("a cancelled command's caller is stuck reading a socket without deadlines")
		}
	})
}

// rawPeer is an extension written by hand on the in-memory socket, to send
// frames split and interleaved as no WebSocket library would.
type rawPeer struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
	key  uint32
}

// upgradeRaw opens a WebSocket to the hub by hand and says nothing.
func upgradeRaw(t *testing.T, e *env) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := e.ln.Dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn, upgradeConn(t, conn)
}

// upgradeConn asks for a WebSocket on conn and reads the 101 answer.
func upgradeConn(t *testing.T, conn net.Conn) *bufio.Reader {
	t.Helper()
	_, err := io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:52789\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	return br
}

func dialRawPeer(t *testing.T, e *env) *rawPeer {
	t.Helper()
	conn, br := upgradeRaw(t, e)
	p := &rawPeer{t: t, conn: conn, br: br, key: 0x11223344}
	p.send(0x81, `{"type":"browser_hello","token":"`+testToken+`","extension_version":"1.0.0"}`)
	for _, want := range []string{"browser_hello_ack", "mode"} {
		op, payload := p.next()
		require.Equal(t, byte(0x81), op)
		require.Contains(t, string(payload), `"type":"`+want+`"`)
	}
	return p
}

func (p *rawPeer) frame(first byte, payload string) []byte {
	p.key = p.key*1103515245 + 12345
	return clientFrame(first, []byte(payload), p.key)
}

func (p *rawPeer) send(first byte, payload string) { p.write(p.frame(first, payload)) }

func (p *rawPeer) write(b []byte) {
	_, err := p.conn.Write(b)
	require.NoError(p.t, err)
}

// next reads the hub's next frame: its first byte and payload.
func (p *rawPeer) next() (byte, []byte) {
	var h [2]byte
	_, err := io.ReadFull(p.br, h[:])
	require.NoError(p.t, err)
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		_, err = io.ReadFull(p.br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		_, err = io.ReadFull(p.br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	require.NoError(p.t, err)
	payload := make([]byte, n)
	_, err = io.ReadFull(p.br, payload)
	require.NoError(p.t, err)
	return h[0], payload
}

// command reads the next frame, a browser command, and returns its id.
func (p *rawPeer) command() string {
	op, payload := p.next()
	require.Equal(p.t, byte(0x81), op)
	var cmd struct{ Type, ID string }
	require.NoError(p.t, json.Unmarshal(payload, &cmd))
	require.Equal(p.t, "browser_command", cmd.Type)
	return cmd.ID
}

func resultJSON(id, content string) string {
	return `{"type":"browser_result","id":"` + id + `","content":"` + content + `"}`
}

// startRead starts a read command and returns its outcome's channel and
// the command's id.
func startRead(ctx context.Context, e *env, p *rawPeer) (<-chan readOutcome, string) {
	out := make(chan readOutcome, 1)
	go func() {
		res, err := e.hub.Read(ctx, "")
		out <- readOutcome{res, err}
	}()
	return out, p.command()
}

type readOutcome struct {
	res *BrowserResult
	err error
}

// rawCallerTurn answers one command (the serve loop then leaves the turn
// free) and starts a second, whose caller holds the turn when it returns.
func rawCallerTurn(t *testing.T, e *env, p *rawPeer, ctx context.Context) (*extConn, <-chan readOutcome, string) {
	t.Helper()
	c := e.hub.cur.Load()
	require.NotNil(t, c)
	out, id := startRead(t.Context(), e, p)
	p.send(0x81, resultJSON(id, "first"))
	require.NoError(t, (<-out).err)
	synctest.Wait()
	require.Equal(t, turnFree, turnOf(c))
	out, id = startRead(ctx, e, p)
	synctest.Wait()
	require.Equal(t, turnCaller, turnOf(c))
	return c, out, id
}

// A result split into single bytes, a ping between its fragments, reaches
// the reading caller, and the ping is answered.
func TestCallerReadsSplitFragmentedResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		p := dialRawPeer(t, e)
		_, out, id := rawCallerTurn(t, e, p, t.Context())
		body := resultJSON(id, "split")
		var stream []byte
		stream = append(stream, p.frame(0x01, body[:10])...)
		stream = append(stream, p.frame(0x89, "ping!")...)
		stream = append(stream, p.frame(0x00, body[10:20])...)
		stream = append(stream, p.frame(0x80, body[20:])...)
		go func() {
			for i := range stream {
				p.conn.Write(stream[i : i+1])
			}
		}()
		op, payload := p.next()
		assert.Equal(t, byte(0x8a), op)
		assert.Equal(t, "ping!", string(payload))
		o := <-out
		require.NoError(t, o.err)
		assert.Equal(t, "split", o.res.Content)
	})
}

// A caller cancelled while half a frame is in the gate loses no byte: the
// serve loop reads the rest, and the connection carries on.
func TestCallerCancelledMidFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		p := dialRawPeer(t, e)
		ctx, cancel := context.WithCancel(t.Context())
		c, out, id := rawCallerTurn(t, e, p, ctx)
		late := p.frame(0x81, resultJSON(id, "late"))
		p.write(late[:9])
		synctest.Wait()
		cancel()
		assert.ErrorIs(t, (<-out).err, context.Canceled)
		synctest.Wait()
		assert.Equal(t, turnServe, turnOf(c))
		p.write(late[9:])
		out, id = startRead(t.Context(), e, p)
		p.send(0x81, resultJSON(id, "next"))
		o := <-out
		require.NoError(t, o.err)
		assert.Equal(t, "next", o.res.Content)
	})
}

// Two commands in flight: whichever result comes first, each caller gets
// its own, and the turn ends with the serve loop or free.
func TestCallerTurnTwoCommands(t *testing.T) {
	for _, holderFirst := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, HubOptions{})
			p := dialRawPeer(t, e)
			c, outA, idA := rawCallerTurn(t, e, p, t.Context())
			outB, idB := startRead(t.Context(), e, p)
			synctest.Wait()
			require.Equal(t, turnCaller, turnOf(c))
			if holderFirst {
				p.send(0x81, resultJSON(idA, "a"))
				p.send(0x81, resultJSON(idB, "b"))
			} else {
				p.send(0x81, resultJSON(idB, "b"))
				p.send(0x81, resultJSON(idA, "a"))
			}
			a, b := <-outA, <-outB
			require.NoError(t, a.err)
			require.NoError(t, b.err)
			assert.Equal(t, "a", a.res.Content)
			assert.Equal(t, "b", b.res.Content)
		})
	}
}

// A frame over the read limit is refused with the same error whether a
// caller or the serve loop reads it.
func TestCallerTurnReadLimit(t *testing.T) {
	for _, callerReads := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			disc := make(chan error, 1)
			e := newEnv(t, HubOptions{ReadLimit: 1024, OnDisconnect: func(_ ConnInfo, err error) { disc <- err }})
			p := dialRawPeer(t, e)
			var out <-chan readOutcome
			var id string
			if callerReads {
				_, out, id = rawCallerTurn(t, e, p, t.Context())
			} else {
				out, id = startRead(t.Context(), e, p)
				synctest.Wait()
				require.Equal(t, turnServe, turnOf(e.hub.cur.Load()))
			}
			go p.send(0x81, resultJSON(id, strings.Repeat("x", 2000)))
			op, payload := p.next()
			require.Equal(t, byte(0x88), op)
			assert.Equal(t, uint16(1009), binary.BigEndian.Uint16(payload))
			err := (<-out).err
			assert.ErrorIs(t, err, ErrDisconnected)
			var tooLarge *FrameTooLargeError
			assert.ErrorAs(t, err, &tooLarge)
			assert.ErrorAs(t, <-disc, &tooLarge)
			p.conn.Close()
		})
	}
}

// A replaced connection whose peer never answers the close frame: the
// command its caller was reading for fails at once, not when the close
// handshake gives up.
func TestCallerTurnReplacedPeerSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		p := dialRawPeer(t, e)
		_, out, _ := rawCallerTurn(t, e, p, t.Context())
		go io.Copy(io.Discard, p.br) // reads everything, answers nothing
		e.dial(extbridgetest.Options{})
		synctest.Wait()
		select {
		case o := <-out:
			assert.ErrorIs(t, o.err, ErrDisconnected)
		default:
			t.Fatal("the replaced connection's reading caller waits for the close handshake")
		}
	})
}

// Giving the turn up never waits for another reader of the gate (the
// library's close handshake, reading for the close frame a silent peer
// never sends, which it may start while a failed command's caller is on
// its way out of the gate): the turn goes to the serve loop, since someone
// reads. On the old code releaseTurn never returns here (the test times
// out): a mutex wait is not one synctest can see, so the test is outside a
// bubble.
func TestReleaseTurnWhileGateRead(t *testing.T) {
	c := &extConn{hub: &Hub{}}
	c.turn.gate = newFrameGate(nil, nil)
	c.turn.wake = make(chan struct{}, 1)
	c.turn.holder, c.turn.caller = turnCaller, &pendingCall{}
	c.turn.gate.mu.Lock() // another reader
	assert.False(t, c.releaseTurn(nil))
	c.turn.gate.mu.Unlock()
	assert.Equal(t, turnServe, turnOf(c))
	select {
	case <-c.turn.wake:
	default:
		t.Error("the serve loop is not woken")
	}
}

// The peer's close frame while a caller reads: the close is answered, and
// the command fails with the peer's code.
func TestCallerTurnPeerCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		p := dialRawPeer(t, e)
		_, out, _ := rawCallerTurn(t, e, p, t.Context())
		go p.send(0x88, "\x0f\xa0bye") // 4000
		op, payload := p.next()
		require.Equal(t, byte(0x88), op)
		assert.Equal(t, uint16(4000), binary.BigEndian.Uint16(payload))
		err := (<-out).err
		assert.ErrorIs(t, err, ErrDisconnected)
		var closed *PeerClosedError
		require.ErrorAs(t, err, &closed)
		assert.Equal(t, 4000, closed.Code)
	})
}

// Shutdown waits for the command a caller reads for, then closes with
// 1001 and returns once the peer answers.
func TestCallerTurnShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		p := dialRawPeer(t, e)
		_, out, id := rawCallerTurn(t, e, p, t.Context())
		shut := make(chan error, 1)
		go func() { shut <- e.hub.Shutdown(t.Context()) }()
		synctest.Wait()
		p.send(0x81, resultJSON(id, "last"))
		o := <-out
		require.NoError(t, o.err)
		assert.Equal(t, "last", o.res.Content)
		op, payload := p.next()
		require.Equal(t, byte(0x88), op)
		assert.Equal(t, uint16(1001), binary.BigEndian.Uint16(payload))
		p.send(0x88, string(payload[:2]))
		require.NoError(t, <-shut)
	})
}

// A peer that stops in the middle of a frame over the limit (before the
// hello here) cannot hold the connection open: the close handshake, which
// would skip the rest of that frame first, gives up after WriteTimeout.
func TestCloseHandshakeBoundedMidFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, HubOptions{})
		conn, br := upgradeRaw(t, e)
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, br); close(drained) }()
		header := binary.BigEndian.AppendUint64([]byte{0x81, 0xff}, 1<<20)
		_, err := conn.Write(append(header, 1, 2, 3, 4))
		require.NoError(t, err)
		_, err = conn.Write(make([]byte, DefaultPreHelloReadLimit+1024)) // then nothing
		require.NoError(t, err)
		time.Sleep(DefaultHelloTimeout + DefaultWriteTimeout + time.Second)
		synctest.Wait()
		select {
		case <-drained:
		default:
			t.Fatal("the hub still holds the connection")
		}
		e.hub.mu.Lock()
		defer e.hub.mu.Unlock()
		assert.Empty(t, e.hub.conns)
	})
}
