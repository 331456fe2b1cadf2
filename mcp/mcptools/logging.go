package mcptools

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultClientLogQueue is how many log records a [ClientLogHandler] holds
// for its clients when ClientLogOptions.Queue is zero; a record logged while
// the queue is full is dropped, so a client that does not read never slows
// the server down.
const DefaultClientLogQueue = 64

// ClientLogOptions configures [NewClientLogHandler]. Nil means defaults.
type ClientLogOptions struct {
	// Level is the lowest level sent to clients at all (each client also
	// chooses its own with logging/setLevel). Default: slog.LevelInfo.
	Level slog.Leveler
	// Queue bounds the records waiting to be sent. Zero means
	// DefaultClientLogQueue.
	Queue int
	// LoggerName names the logger in each notification. Default: none.
	LoggerName string
}

// ClientLogHandler is an [slog.Handler] that sends the server's log records
// to its MCP clients as notifications/message, so that a client sees the
// server's warnings (a bridge connection lost, a site without tools, a
// site's pacing) without reading its standard error. Each session gets the
// records at or above the level it set with logging/setLevel, and none
// before it sets one (the go-sdk's rule, as the specification implies). The
// notification's data is an object: "msg" and the record's attributes
// (groups as "group.key"), values as text.
//
// Records are sent by one goroutine, from a bounded queue: a full queue
// drops the record, so logging never blocks. Close stops the goroutine. A
// ClientLogHandler is safe for concurrent use.
//
// The handler is made before the server, and given it with
// [ClientLogHandler.Attach], because what the server is made from logs
// through it: mcp.ServerOptions.Logger may be a logger that includes it, and
// so may what runs before mcp.NewServer and keeps logging after (the
// agentbridge-mcp command discovers its sites first, since their outcome goes
// into the server's Instructions, and the sites' client logs a site's pacing
// during tool calls through the same logger). A constructor taking the
// server could serve neither, so the handler takes the server in a second
// step; records logged before it are not sent (there is no session to send
// them to yet).
//
// The zero value sends nothing, as slog.DiscardHandler: Enabled reports
// false and Close does nothing; Attach panics, since it has no queue. Make
// one with [NewClientLogHandler].
type ClientLogHandler struct {
	st    *clientLogState
	attrs []slog.Attr
	group string // the group prefix of attributes added next, "a.b."
}

// clientLogItem is a record to send, or (done non-nil) a marker closed when
// the records before it are sent.
type clientLogItem struct {
	//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
	p    *mcp.LoggingMessageParams
	done chan struct{}
}

type clientLogState struct {
	level  slog.Leveler
	name   string
	server atomic.Pointer[mcp.Server]
	queue  chan clientLogItem
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// NewClientLogHandler returns a handler sending to the sessions of the server
// given to Attach, and starts its goroutine.
func NewClientLogHandler(opts *ClientLogOptions) *ClientLogHandler {
	if opts == nil {
		opts = &ClientLogOptions{}
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	n := opts.Queue
	if n <= 0 {
		n = DefaultClientLogQueue
	}
	st := &clientLogState{level: level, name: opts.LoggerName,
		queue: make(chan clientLogItem, n), stop: make(chan struct{}), done: make(chan struct{})}
	go st.run()
	return &ClientLogHandler{st: st}
}

// Attach sets the server whose sessions receive the records from now on,
// replacing any server attached before; nil stops sending. It panics on a
// ClientLogHandler not made by NewClientLogHandler.
func (h *ClientLogHandler) Attach(server *mcp.Server) {
	if h.st == nil {
		panic("mcptools: ClientLogHandler.Attach on a handler not made by NewClientLogHandler")
	}
	h.st.server.Store(server)
}

// Close stops sending; records still queued are dropped. Close is
// idempotent.
func (h *ClientLogHandler) Close() error {
	if h.st == nil {
		return nil
	}
	h.st.once.Do(func() { close(h.st.stop) })
	<-h.st.done
	return nil
}

func (st *clientLogState) run() {
	defer close(st.done)
	for {
		select {
		case <-st.stop:
			return
		case item := <-st.queue:
			server := st.server.Load()
			if item.done != nil {
				close(item.done)
				continue
			}
			if server == nil {
				continue
			}
			for ss := range server.Sessions() {
				// Log applies the session's level, and ends with
				// the session.
				//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
				_ = ss.Log(context.Background(), item.p)
			}
		}
	}
}

// Enabled reports whether level reaches clients at all.
func (h *ClientLogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.st != nil && level >= h.st.level.Level()
}

// Handle queues r for the clients, or drops it when the queue is full.
func (h *ClientLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.st == nil || h.st.server.Load() == nil {
		return nil
	}
	data := make(map[string]string, 1+len(h.attrs)+r.NumAttrs())
	data["msg"] = r.Message
	for _, a := range h.attrs {
		data[a.Key] = a.Value.Resolve().String()
	}
	r.Attrs(func(a slog.Attr) bool {
		data[h.group+a.Key] = a.Value.Resolve().String()
		return true
	})
	//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
	p := &mcp.LoggingMessageParams{Level: mcpLevel(r.Level), Logger: h.st.name, Data: data}
	select {
	case h.st.queue <- clientLogItem{p: p}:
	default:
	}
	return nil
}

// sent waits until the records queued before it are sent.
func (h *ClientLogHandler) sent() {
	done := make(chan struct{})
	select {
	case h.st.queue <- clientLogItem{done: done}:
		<-done
	case <-h.st.done:
	}
}

// WithAttrs returns a handler adding attrs to each record.
func (h *ClientLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		c.attrs = append(c.attrs, slog.Attr{Key: h.group + a.Key, Value: a.Value})
	}
	return &c
}

// WithGroup returns a handler whose later attributes are in group name.
func (h *ClientLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// mcpLevel is the MCP logging level of an slog level: the highest MCP level
// at or below it.
//
//lint:ignore SA1019 MCP logging, deprecated from protocol 2026-07-28 (SEP-2577), is still served to the protocols before it
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= mcp.LevelEmergency:
		return "emergency"
	case l >= mcp.LevelAlert:
		return "alert"
	case l >= mcp.LevelCritical:
		return "critical"
	case l >= mcp.LevelError:
		return "error"
	case l >= mcp.LevelWarning:
		return "warning"
	case l >= mcp.LevelNotice:
		return "notice"
	case l >= mcp.LevelInfo:
		return "info"
	}
	return "debug"
}
