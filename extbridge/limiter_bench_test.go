package extbridge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// benchFreshConnections opens a new TCP connection per iteration, sends one
// request and reads the response, leaving the connection open (as an idle
// keep-alive squatter would), so that past the cap every accept evicts.
func benchFreshConnections(b *testing.B, addr string) {
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		open = append(open, c)
		if len(open) > 2*DefaultMaxUnauthConns {
			open[0].Close()
			open = open[1:]
		}
		if _, err := io.WriteString(c, "GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkUnauthConnections: a fresh connection and one request per
// iteration through the hub's Serve, which tracks unauthenticated
// connections and, past MaxUnauthConns, evicts one per accept.
func BenchmarkUnauthConnections(b *testing.B) {
	e := newTCPEnv(b, HubOptions{})
	benchFreshConnections(b, e.url[len("ws://"):len(e.url)-len("/ws")])
}

// BenchmarkUnauthConnectionsFloor is the same against a bare http.Server
// with the hub as handler but no connection tracking: the floor.
func BenchmarkUnauthConnectionsFloor(b *testing.B) {
	h, err := NewHub(testToken, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	defer srv.Close()
	benchFreshConnections(b, l.Addr().String())
}
