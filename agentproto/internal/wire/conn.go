package wire

import (
	"net"
	"syscall"
	"time"
)

// ReadBufferSize is the read buffer of each connection, client's and
// server's: frames that arrive together are read with one system call.
const ReadBufferSize = 32 << 10

// MaxReplySize is the largest reply frame written to a client: anything
// the frame header can say, since results are relayed whatever their size
// (the extension sends up to 64 MiB).
const MaxReplySize = 1<<32 - 1

// Null is the JSON null a missing result stands for.
var Null = []byte(`null`)

// RawConn returns nc's raw connection when it has one (sockets do; the
// in-memory pipes of tests do not), for queues to write on directly.
func RawConn(nc net.Conn) syscall.RawConn {
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			return rc
		}
	}
	return nil
}

// OrDefault returns v, or def when v is zero or negative: how every limit
// of the options structs reads its zero value.
func OrDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// SkipSpace returns the index of b's first byte that is not JSON
// whitespace (len(b) when there is none).
func SkipSpace(b []byte) int { return skipSpace(b, 0) }

// EventKind returns an event's "kind" member ("" when it has none).
func EventKind(raw []byte) string {
	if len(raw) == 0 || raw[0] != '{' {
		return ""
	}
	var it Members
	it.Reset(raw)
	kind := ""
	for it.Next() {
		if m := it.Member(); string(UnescapeKey(m)) == "kind" && m.Value[0] == '"' {
			k, _ := Unquote(m.Value)
			kind = string(k)
		}
	}
	return kind
}

// ClampMillis converts a positive number of milliseconds to a duration of
// at most limit (comparing before converting: a float beyond int64 does
// not convert to a sensible duration).
func ClampMillis(ms float64, limit time.Duration) time.Duration {
	if ms >= float64(limit/time.Millisecond) {
		return limit
	}
	return max(time.Duration(ms*float64(time.Millisecond)), time.Millisecond)
}

// WaitMargin is how much longer than tasks.wait's own wait the bridge is
// given before it times the request out (the reference's HTTP layer adds
// 5 s).
const WaitMargin = 5 * time.Second
