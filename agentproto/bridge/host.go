package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/internal/wire"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// ErrOriginNotAllowed is returned by [Host.Run] when the caller's origin is
// not in HostOptions.AllowedOrigins.
var ErrOriginNotAllowed = errors.New("bridge: caller origin not allowed")

// DefaultMaxLinkQueue is the default limit of request bytes waiting to be
// written to the extension.
const DefaultMaxLinkQueue = 64 << 20

// HostOptions configures a [Host]. The zero value is the default.
type HostOptions struct {
	// CallerOrigin is the origin the browser started the host for, from
	// its launch arguments ("chrome-extension://<id>/").
	CallerOrigin string
	// AllowedOrigins, when not empty, lists the only caller origins the
	// host serves: Run refuses any other with [ErrOriginNotAllowed]. The
	// manifest's allowed_origins already restricts who can start the
	// host; this guards against a manifest edited by someone else.
	AllowedOrigins []string
	// MaxLinkQueue limits the request bytes waiting to be written to the
	// extension; beyond it requests are refused with [agentproto.MsgLinkCongested].
	// Zero means [DefaultMaxLinkQueue].
	MaxLinkQueue int
	// Logger receives the host's diagnostics. Nil means none.
	Logger *slog.Logger
}

// Host is the native messaging side of the bridge: an [Extension] that
// forwards requests to the browser extension over a native messaging
// connection (the host process's standard streams) and delivers its
// responses and events.
//
// The extension marks itself online with {"kind":"bridge:hello"}. Each
// request goes to it as {"kind":"bridge:request","id":…} with an id the
// host makes; responses may come back in any order and are matched by that
// id; responses with unknown ids are dropped. A request whose frame would
// exceed the connection's write limit (Chrome's 1 MiB) is refused with an
// error matching [agentproto.ErrRequestTooLarge] and the link stays up. When the
// connection ends, every pending request fails with [agentproto.MsgStreamClosed].
//
// Give a Host to [NewServer] as its Extension. Its methods are safe for
// concurrent use.
type Host struct {
	conn  *nativemsg.Conn
	log   *slog.Logger
	opts  HostOptions
	limit int // the largest frame the extension accepts
	out   *wire.Queue

	online  atomic.Bool
	publish atomic.Pointer[func(json.RawMessage)]
	hello   chan struct{} // closed at the extension's first hello
	gone    chan struct{} // closed when the link has ended
	endOnce sync.Once

	mu      sync.Mutex
	pending map[uint64]*Call
	nextID  uint64
	ended   bool // Run has ended: the link is gone for good
	running bool
}

// NewHost returns a [Host] for the extension at the other end of conn. Run
// must be called to serve it.
func NewHost(conn *nativemsg.Conn, opts *HostOptions) *Host {
	h := &Host{conn: conn, pending: map[uint64]*Call{}, hello: make(chan struct{}), gone: make(chan struct{})}
	if opts != nil {
		h.opts = *opts
	}
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.limit = conn.Writer.Limit()
	h.out = wire.NewQueue(wire.NativeWriter(conn.Writer), wire.QueueOptions{
		MaxQueued: wire.OrDefault(h.opts.MaxLinkQueue, DefaultMaxLinkQueue),
		Direct:    wire.NativeRawConn(conn.Writer), // nil for in-memory links
	})
	return h
}

// Online reports whether the extension has said hello and the link is up.
func (h *Host) Online() bool { return h.online.Load() }

// WaitOnline waits until the extension has said hello, so that the host
// serves calls. It returns nil at once when it is online, an error
// matching [agentproto.ErrStreamClosed] when the link has ended (before or after a
// hello: a Host serves one link), or ctx's error when ctx ends first.
func (h *Host) WaitOnline(ctx context.Context) error {
	select {
	case <-h.gone:
		return fmt.Errorf("%w: the host's link has ended", agentproto.ErrStreamClosed)
	default:
	}
	select {
	case <-h.hello:
		select {
		case <-h.gone:
			return fmt.Errorf("%w: the host's link has ended", agentproto.ErrStreamClosed)
		default:
			return nil
		}
	case <-h.gone:
		return fmt.Errorf("%w: the host's link has ended", agentproto.ErrStreamClosed)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetEventHandler sets the function the extension's events go to.
// NewServer calls it; an event arriving with no handler set is dropped.
func (h *Host) SetEventHandler(publish func(event json.RawMessage)) {
	h.publish.Store(&publish)
}

var (
	requestHead = []byte(`{"kind":"bridge:request","id":"`)
	requestType = []byte(`","type":`)
	requestPay  = []byte(`,"payload":`)
	requestTail = closeBrace
)

// Forward sends c to the extension.
func (h *Host) Forward(c *Call) {
	typeLit := c.typeLit
	if typeLit == nil {
		typeLit = wire.AppendString(nil, c.Type)
	}
	h.mu.Lock()
	if c.done.Load() {
		// Answered already (timed out): forget has run or finds nothing,
		// so it must not be made pending, nor sent.
		h.mu.Unlock()
		return
	}
	if h.ended || !h.online.Load() {
		ended := h.ended
		h.mu.Unlock()
		if ended {
			c.Fail(errStreamClosed)
		} else {
			c.Fail(errExtensionOffline)
		}
		return
	}
	h.nextID++
	id := h.nextID
	c.hostID = id
	h.pending[id] = c
	h.mu.Unlock()

	var buf [160]byte
	head := append(buf[:0], requestHead...)
	head = wire.AppendUint(head, id)
	head = append(head, requestType...)
	head = append(head, typeLit...)
	head = append(head, requestPay...)
	if size := len(head) + len(c.Payload) + len(requestTail); size > h.limit {
		h.forget(c)
		c.Fail(requestTooLarge(size, h.limit))
		return
	}
	// A large payload is written from the request's frame buffer: the
	// link holds a reference to it of its own, since the agent's reply,
	// which releases the request's, may come first (a timeout).
	if c.reqBuf != nil {
		c.reqBuf.Retain()
	}
	// Sent outside h.mu: the frame may be written at once, from this
	// goroutine. If the link ends meanwhile, end fails c first.
	err := h.out.Send(head, c.Payload, requestTail, c.reqBuf, nil)
	switch {
	case err == nil:
	case errors.Is(err, wire.ErrQueueFull):
		h.forget(c)
		c.Fail(errLinkCongested)
	default:
		h.forget(c)
		c.Fail(errStreamClosed)
	}
}

// forget drops the pending entry of a call the server answered itself (a
// timeout): a late response to it is then dropped as unknown.
func (h *Host) forget(c *Call) {
	h.mu.Lock()
	if h.pending[c.hostID] == c {
		delete(h.pending, c.hostID)
	}
	h.mu.Unlock()
}

// Pending reports the number of requests waiting for the extension.
func (h *Host) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pending)
}

// Run serves the link until the connection ends (it returns nil at a
// clean end of stream: the extension disconnected), a read fails, or ctx
// is done (it closes the connection and returns ctx's error). Either way
// every pending request fails with [agentproto.MsgStreamClosed] before Run returns, and
// the host stays offline. Run may be called once.
func (h *Host) Run(ctx context.Context) error {
	h.mu.Lock()
	if h.running || h.ended {
		h.mu.Unlock()
		return errors.New("bridge: Host.Run called twice")
	}
	h.running = true
	h.mu.Unlock()

	if len(h.opts.AllowedOrigins) > 0 && !slices.Contains(h.opts.AllowedOrigins, h.opts.CallerOrigin) {
		h.log.Error("bridge: caller origin not in the allowlist; refusing to serve it")
		h.end()
		h.conn.Close()
		return fmt.Errorf("%w: %q", ErrOriginNotAllowed, h.opts.CallerOrigin)
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := h.out.Run(); err != nil {
			h.log.Warn("bridge: writing to the extension failed", "err", err)
			h.conn.Close()
		}
	})
	stop := make(chan struct{})
	wg.Go(func() {
		select {
		case <-ctx.Done():
			h.conn.Close()
		case <-stop:
		}
	})

	err := h.readLoop()
	close(stop)
	h.end()
	h.conn.Close()
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// end marks the link gone and fails every pending request at once.
func (h *Host) end() {
	h.online.Store(false)
	h.endOnce.Do(func() { close(h.gone) })
	h.mu.Lock()
	h.ended = true
	pending := h.pending
	h.pending = map[uint64]*Call{}
	h.mu.Unlock()
	h.out.Close()
	for _, c := range pending {
		c.Fail(errStreamClosed)
	}
}

// Close closes the connection; Run then returns. Close is idempotent.
func (h *Host) Close() error {
	return h.conn.Close()
}

func (h *Host) readLoop() error {
	var f wire.ExtensionFrame
	for {
		frame, buf, err := wire.ReadFrame(h.conn.Reader)
		if err != nil {
			if errors.Is(err, nativemsg.ErrEmptyFrame) || errors.Is(err, nativemsg.ErrInvalidJSON) {
				h.log.Warn("bridge: ignoring a malformed frame from the extension", "err", err)
				continue
			}
			return err
		}
		if err := wire.DecodeExtensionFrame(frame, &f); err != nil {
			buf.Release()
			h.log.Warn("bridge: ignoring a malformed frame from the extension", "err", err)
			continue
		}
		switch string(f.Kind) { // string(…) of a []byte in a switch does not allocate
		case string(agentproto.KindResponse):
			h.deliver(&f, buf)
		case string(agentproto.KindEvent):
			if f.Event != nil {
				if p := h.publish.Load(); p != nil {
					(*p)(f.Event)
				}
			}
			// Small events were copied to every client; large ones stay
			// borrowed until written, so their buffer is left to the
			// garbage collector.
			if len(f.Event) <= wire.CopyLimit {
				buf.Release()
			}
		case string(agentproto.KindHello):
			buf.Release()
			if !h.online.Swap(true) {
				h.log.Info("bridge: extension online")
				close(h.hello)
			}
		default:
			buf.Release()
			h.log.Debug("bridge: ignoring a frame of unknown kind")
		}
	}
}

// deliver answers the pending call a response is for; buf holds the frame.
func (h *Host) deliver(f *wire.ExtensionFrame, buf *wire.Buffer) {
	id, ok := wire.ParseUint(f.ID)
	var c *Call
	if ok {
		h.mu.Lock()
		c = h.pending[id]
		delete(h.pending, id)
		h.mu.Unlock()
	}
	if c == nil {
		buf.Release()
		h.log.Debug("bridge: dropping a response with an unknown id")
		return
	}
	if msg, isErr := wire.ErrorText(f.ErrorMsg); isErr {
		buf.Release()
		c.Fail(&agentproto.RemoteError{Message: msg})
		return
	}
	c.complete(f.Result, nil, false, buf)
}
