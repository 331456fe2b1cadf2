package agentproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/agentproto/internal/sockpath"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// Environment variables of the protocol.
const (
	EnvToken                = "WEBOPERATOR_API_TOKEN"
	EnvAllowUnauthenticated = "WEBOPERATOR_ALLOW_UNAUTHENTICATED_BRIDGE"
	EnvSocket               = "WEBOPERATOR_AGENT_SOCKET"
	EnvBridgeHost           = "WEBOPERATOR_BRIDGE_HOST"
	EnvBridgePort           = "WEBOPERATOR_BRIDGE_PORT"
)

// DefaultMaxResponseSize is the largest frame a [Client] reads by default:
// the 64 MiB Chrome lets an extension send, plus room for the envelope.
const DefaultMaxResponseSize = nativemsg.DefaultReadLimit + 64<<10

// DefaultEventBuffer is a subscription's default buffer, in events.
const DefaultEventBuffer = 256

// ClientOptions configures a [Client]. Nil options mean all defaults.
type ClientOptions struct {
	// Token is sent with every request. Empty means none. The client never
	// reads the environment: [DialEnv] and [Config.ClientOptions] take the
	// token from WEBOPERATOR_API_TOKEN when asked to.
	Token string
	// InsecureSkipPeerCheck turns off [Dial]'s check of the server's user.
	// By default Dial reads the socket's peer credentials (SO_PEERCRED on
	// Linux, LOCAL_PEERCRED on macOS and FreeBSD) and refuses a server
	// that runs as another user with [ErrForeignPeer], before anything
	// (the token above all) is written: a socket planted at the path by
	// someone else never sees it. Where the credentials cannot be read
	// (other systems), Dial fails with [ErrPeerCredentials] unless this is
	// set. [NewClient] never checks: its caller vouches for the
	// connection.
	InsecureSkipPeerCheck bool
	// MaxResponseSize is the largest frame read, in bytes. A larger one
	// ends the connection. Zero means [DefaultMaxResponseSize].
	MaxResponseSize int
	// MaxRequestSize is the largest request frame sent, in bytes: a larger
	// request fails with a *[RequestSizeError] before anything is written,
	// so the connection stays up (a server closes the connection after
	// answering an oversized frame). Zero means [DefaultMaxRequestSize],
	// the limit of a [github.com/agentbridge/agentbridge/agentproto/bridge.Server] and of the reference host.
	MaxRequestSize int
	// Logger receives the client's diagnostics. Nil means none.
	Logger *slog.Logger
}

// Client is a connection to an agent protocol server (a
// [github.com/agentbridge/agentbridge/agentproto/bridge.Server], or the reference Node.js host). Many calls may be in flight at once,
// from many goroutines: all its methods are safe for concurrent use.
type Client struct {
	nc       net.Conn
	log      *slog.Logger
	tokenLit []byte // `,"token":"…"` or nil
	out      *wire.Queue
	maxFrame int
	maxReq   int

	mu      sync.Mutex
	pending map[uint64]*clientCall
	nextID  uint64
	err     error // why the connection ended; nil while it is up
	// frameErr is the last error the server sent for no request: when
	// the connection ends, it is the likely reason.
	frameErr *RemoteError
	subs     map[*Subscription]struct{}

	closeOnce sync.Once
	wg        sync.WaitGroup
}

type clientCall struct {
	done   chan struct{}
	result []byte
	buf    *wire.Buffer // holds result
	err    error
}

// PlatformSocketPath returns the agent socket's default path on this
// system, without looking at the environment: [DefaultSocketPath] (on
// Windows, which has no shared /tmp, the per-user
// %LOCALAPPDATA%\WebOperator\agent.sock). WEBOPERATOR_AGENT_SOCKET
// overrides it only where a program asks for it: [ConfigFromEnv],
// [DialEnv].
func PlatformSocketPath() string { return sockpath.Default() }

// Dial connects to the agent socket at path ("" means
// [PlatformSocketPath]()). Unless opts.InsecureSkipPeerCheck is set, it
// first checks that the server runs as the current user (see
// [ClientOptions]). opts may be nil. Dial reads no environment variable:
// the path and opts.Token are all it uses ([DialEnv] follows the
// reference client's WEBOPERATOR_* variables).
//
// A [github.com/agentbridge/agentbridge/agentproto/bridge.Server] closes
// a connection that sends no authenticated request within its
// ServerOptions.AuthTimeout (10 s by default): a program that dials early
// and only listens to events, or calls much later, sends a first request
// at once, such as [Client.Health].
func Dial(ctx context.Context, path string, opts *ClientOptions) (*Client, error) {
	if path == "" {
		path = PlatformSocketPath()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("agentproto: dial: %w", err)
	}
	if opts == nil || !opts.InsecureSkipPeerCheck {
		if err := checkDialedPeer(nc, path); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return NewClient(nc, opts), nil
}

// DialEnv dials as the reference agent client does, from the variables
// the browser passes to the host: the socket at WEBOPERATOR_AGENT_SOCKET
// (else [PlatformSocketPath]) and, unless opts sets a Token, the token of
// WEBOPERATOR_API_TOKEN. getenv reads a variable (nil means os.Getenv);
// only these two are read. opts may be nil and is not modified.
func DialEnv(ctx context.Context, getenv func(string) string, opts *ClientOptions) (*Client, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Token == "" {
		o.Token = getenv(EnvToken)
	}
	return Dial(ctx, getenv(EnvSocket), &o)
}

// NewClient returns a [Client] speaking the protocol over conn, which it
// owns from then on. opts may be nil.
func NewClient(conn net.Conn, opts *ClientOptions) *Client {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	c := &Client{
		nc:       conn,
		log:      o.Logger,
		maxFrame: wire.OrDefault(o.MaxResponseSize, DefaultMaxResponseSize),
		maxReq:   wire.OrDefault(o.MaxRequestSize, DefaultMaxRequestSize),
		pending:  map[uint64]*clientCall{},
		subs:     map[*Subscription]struct{}{},
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o.Token != "" {
		c.tokenLit = wire.AppendString([]byte(`,"token":`), o.Token)
	}
	// Payloads are copied as they are queued: a call whose context ends
	// returns at once, and its caller may then reuse the payload's memory
	// while the frame still waits to be written.
	c.out = wire.NewQueue(wire.NativeWriter(nativemsg.NewWriter(conn, &nativemsg.WriterOptions{MaxFrameSize: wire.MaxReplySize})),
		wire.QueueOptions{CopyAll: true, Direct: wire.RawConn(conn)})
	c.wg.Go(c.writeLoop)
	c.wg.Go(c.readLoop)
	return c
}

// timeoutMargin is how much earlier than the context's deadline the
// bridge is asked to time a request out, so that its "timed out" answer
// arrives before the context expires.
func timeoutMargin(remaining time.Duration) time.Duration {
	return min(remaining/16, 250*time.Millisecond)
}

var (
	callHead    = []byte(`{"id":"`)
	callType    = []byte(`","type":`)
	callPayload = []byte(`,"payload":`)
	callTimeout = []byte(`,"timeoutMs":`)
)

// Call sends one request and waits for its answer. payload is encoded
// with encoding/json (a json.RawMessage or []byte is sent as is, and must
// be a JSON object; nil, or a nil json.RawMessage or []byte, sends none).
// The result is decoded into result with encoding/json unless result is
// nil; a *json.RawMessage receives the bytes as relayed. A reply with
// neither result nor error is a null result.
//
// ctx's deadline becomes the request's timeoutMs (slightly shortened, so
// that the bridge's own timeout error arrives first); without one the
// bridge's default (60 s) applies. If ctx ends first, Call returns an
// error matching ctx's error (and [ErrTimeout] for a deadline).
//
// An error reply is a *[RemoteError]; errors.Is matches it against
// [ErrUnauthorized], [ErrExtensionOffline], ErrTimeout, [ErrStreamClosed] and
// the others. A lost connection fails every pending call with an error
// matching [ErrClosed].
func (c *Client) Call(ctx context.Context, typ string, payload any, result any) error {
	res, buf, err := c.call(ctx, typ, payload)
	if err != nil {
		return err
	}
	return decodeResult(typ, res, buf, result)
}

// call is [Client.Call] up to the raw result, held by the returned buffer.
func (c *Client) call(ctx context.Context, typ string, payload any) ([]byte, *wire.Buffer, error) {
	raw, err := encodePayload(payload)
	if err != nil {
		return nil, nil, err
	}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		remaining := time.Until(deadline)
		timeout = remaining - timeoutMargin(remaining)
		if timeout < time.Millisecond {
			return nil, nil, ctxError(ctx, context.DeadlineExceeded)
		}
	}
	return c.do(ctx, typ, raw, timeout)
}

func encodePayload(payload any) ([]byte, error) {
	var raw []byte
	switch p := payload.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if p == nil {
			return nil, nil
		}
		raw = p
	case []byte:
		if p == nil {
			return nil, nil
		}
		raw = p
	default:
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("agentproto: encoding payload: %w", err)
		}
		return b, nil
	}
	if err := wire.Valid(raw); err != nil {
		return nil, fmt.Errorf("agentproto: payload is not valid JSON: %w", err)
	}
	return raw, nil
}

// decodeResult decodes res, the result of a request of type typ, into
// result and releases buf; an error matches [ErrInvalidResult]. A
// *json.RawMessage receives the bytes as encoding/json gives them: copied
// into its own memory, which it reuses when large enough (the frame's
// buffer goes back to its pool), unless the frame's memory is not pooled.
func decodeResult(typ string, res []byte, buf *wire.Buffer, result any) error {
	switch r := result.(type) {
	case nil:
		buf.Release()
		return nil
	case *json.RawMessage:
		if buf != nil && !buf.Pooled() {
			*r = res
			return nil
		}
		*r = append((*r)[:0], res...)
		buf.Release()
		return nil
	}
	err := json.Unmarshal(res, result)
	buf.Release()
	if err != nil {
		return fmt.Errorf("%w of %s: %w", ErrInvalidResult, typ, err)
	}
	return nil
}

// ctxError is the error of a call whose context ended.
func ctxError(ctx context.Context, fallback error) error {
	err := ctx.Err()
	if err == nil {
		err = fallback
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// do sends one request and waits for the raw result, held by the
// returned buffer (which the caller releases, or keeps for good).
func (c *Client) do(ctx context.Context, typ string, payload []byte, timeout time.Duration) ([]byte, *wire.Buffer, error) {
	call := &clientCall{done: make(chan struct{})}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, nil, err
	}
	c.nextID++
	id := c.nextID
	c.mu.Unlock()

	var headBuf [128]byte
	head := append(headBuf[:0], callHead...)
	head = wire.AppendUint(head, id)
	head = append(head, callType...)
	head = wire.AppendString(head, typ)
	var tailBuf [160]byte
	tail := tailBuf[:0]
	if payload != nil {
		head = append(head, callPayload...)
	}
	if timeout > 0 {
		tail = append(tail, callTimeout...)
		tail = wire.AppendUint(tail, uint64(timeout/time.Millisecond))
	}
	tail = append(tail, c.tokenLit...)
	tail = append(tail, '}')
	if size := len(head) + len(payload) + len(tail); size > c.maxReq {
		return nil, nil, &RequestSizeError{Size: size, Limit: c.maxReq}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, nil, err
	}
	c.pending[id] = call
	c.mu.Unlock()
	if err := c.out.Send(head, payload, tail, nil, nil); err != nil {
		c.forget(id)
		c.mu.Lock()
		lost := c.err
		c.mu.Unlock()
		if lost != nil {
			return nil, nil, lost
		}
		return nil, nil, fmt.Errorf("agentproto: sending request: %w", err)
	}

	select {
	case <-call.done:
		return call.result, call.buf, call.err
	case <-ctx.Done():
		if !c.forget(id) {
			// The answer won the race: the reader handed it over.
			<-call.done
			call.buf.Release()
		}
		return nil, nil, ctxError(ctx, nil)
	}
}

// forget drops a pending call and reports whether it was still pending.
func (c *Client) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

func (c *Client) writeLoop() {
	if err := c.out.Run(); err != nil {
		c.log.Debug("agentproto: client write failed", "err", err)
		c.nc.Close() // the reader then fails every pending call
	}
}

func (c *Client) readLoop() {
	r := nativemsg.NewReader(bufio.NewReaderSize(c.nc, wire.ReadBufferSize), &nativemsg.ReaderOptions{MaxFrameSize: c.maxFrame})
	var err error
	for {
		var frame []byte
		var buf *wire.Buffer
		frame, buf, err = wire.ReadFrame(r)
		if err != nil {
			if errors.Is(err, nativemsg.ErrEmptyFrame) || errors.Is(err, nativemsg.ErrInvalidJSON) {
				c.log.Warn("agentproto: ignoring a malformed frame from the bridge", "err", err)
				continue
			}
			break
		}
		c.handleFrame(frame, buf)
	}
	c.shutdown(err)
}

// handleFrame routes one frame; buf holds it and goes with a result to
// its call, or is released here.
func (c *Client) handleFrame(frame []byte, buf *wire.Buffer) {
	var it wire.Members
	it.Reset(frame)
	var id, result, errMsg, kind, event []byte
	for it.Next() {
		m := it.Member()
		switch string(wire.UnescapeKey(m)) {
		case "id":
			id = m.Value
		case "result":
			result = m.Value
		case "error":
			errMsg = m.Value
		case "kind":
			kind = m.Value
		case "event":
			event = m.Value
		}
	}
	if err := it.Err(); err != nil {
		buf.Release()
		c.log.Warn("agentproto: ignoring a malformed frame from the bridge", "err", err)
		return
	}
	if id == nil && string(kind) == `"event"` && event != nil {
		c.deliverEvent(bytes.Clone(event))
		buf.Release()
		return
	}
	n, ok := parseCallID(id)
	if !ok {
		if msg, isErr := wire.ErrorText(errMsg); isErr {
			// A refusal of a frame as a whole (it has no id), such as a
			// server's answer to a frame over its size limit just before
			// it closes the connection: if the connection ends, the
			// pending calls fail with it, so their callers learn why.
			c.log.Warn("agentproto: the bridge reported an error for no request", "error", msg)
			c.mu.Lock()
			c.frameErr = &RemoteError{Message: msg}
			c.mu.Unlock()
		}
		buf.Release()
		return
	}
	c.mu.Lock()
	call := c.pending[n]
	delete(c.pending, n)
	c.mu.Unlock()
	if call == nil {
		buf.Release()
		return // the caller gave up
	}
	if msg, isErr := wire.ErrorText(errMsg); isErr {
		call.err = &RemoteError{Message: msg}
		buf.Release()
	} else if result != nil {
		call.result, call.buf = result, buf
	} else {
		call.result = wire.Null
		buf.Release()
	}
	close(call.done)
}

// parseCallID reads an id this client made: a string of decimal digits.
func parseCallID(id []byte) (uint64, bool) {
	if len(id) < 3 || id[0] != '"' || id[len(id)-1] != '"' {
		return 0, false
	}
	return wire.ParseUint(id[1 : len(id)-1])
}

// shutdown fails every pending call and ends every subscription.
func (c *Client) shutdown(cause error) {
	c.mu.Lock()
	if c.err == nil {
		if cause == nil || errors.Is(cause, io.EOF) {
			cause = io.EOF
		}
		if c.frameErr != nil {
			cause = c.frameErr
		}
		c.err = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	pending := c.pending
	c.pending = map[uint64]*clientCall{}
	subs := c.subs
	c.subs = map[*Subscription]struct{}{}
	err := c.err
	c.mu.Unlock()
	for _, call := range pending {
		call.err = err
		close(call.done)
	}
	for sub := range subs {
		sub.closeChannel()
	}
	c.out.Close()
	c.nc.Close()
}

// Close closes the connection: pending calls fail with [ErrClosed]. It
// waits for the client's goroutines to end. Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = ErrClosed
		}
		c.mu.Unlock()
		c.nc.Close()
		c.out.Close()
	})
	c.wg.Wait()
	return nil
}
