package memnet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/memnet"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestDialAccept: Dial and Accept return the two ends of one pipe, with the
// listener's address on the accepting side.
func TestDialAccept(t *testing.T) {
	l := memnet.NewListener(nil)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		assert.NoError(t, err)
		accepted <- c
	}()
	client, err := l.Dial(t.Context())
	require.NoError(t, err)
	defer client.Close()
	server := <-accepted
	require.NotNil(t, server)
	defer server.Close()

	go client.Write([]byte("hello"))
	buf := make([]byte, 5)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(buf))

	assert.Equal(t, memnet.Addr("memnet"), l.Addr())
	assert.Equal(t, "memnet", l.Addr().Network())
	assert.Equal(t, l.Addr(), server.LocalAddr())
	assert.Equal(t, l.Addr(), client.RemoteAddr())
}

// TestAddresses: the configured listener address and a fresh client address
// per Dial show on both ends.
func TestAddresses(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 52789}
	port := 40000
	l := memnet.NewListener(&memnet.Options{
		Addr: addr,
		ClientAddr: func() net.Addr {
			port++
			return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		},
	})
	defer l.Close()
	assert.Equal(t, "127.0.0.1:52789", l.Addr().String())
	for _, want := range []string{"127.0.0.1:40001", "127.0.0.1:40002"} {
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := l.Accept()
			accepted <- c
		}()
		client, err := l.Dial(t.Context())
		require.NoError(t, err)
		server := <-accepted
		require.NotNil(t, server)
		assert.Equal(t, want, client.LocalAddr().String())
		assert.Equal(t, "127.0.0.1:52789", client.RemoteAddr().String())
		assert.Equal(t, want, server.RemoteAddr().String())
		assert.Equal(t, "127.0.0.1:52789", server.LocalAddr().String())
		client.Close()
		server.Close()
	}
}

// TestCloseUnblocksAcceptAndDial: Close makes waiting and later Accept and
// Dial calls fail with net.ErrClosed, and is idempotent.
func TestCloseUnblocksAcceptAndDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener(nil)
		acceptErr := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			acceptErr <- err
		}()
		synctest.Wait() // Accept is waiting
		require.NoError(t, l.Close())
		assert.ErrorIs(t, <-acceptErr, net.ErrClosed)

		require.NoError(t, l.Close())
		_, err := l.Accept()
		assert.ErrorIs(t, err, net.ErrClosed)
		_, err = l.Dial(t.Context())
		assert.ErrorIs(t, err, net.ErrClosed)
	})
}

// TestCloseUnblocksWaitingDial: a Dial no one accepts fails once the
// listener closes.
func TestCloseUnblocksWaitingDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener(nil)
		dialErr := make(chan error, 1)
		go func() {
			_, err := l.Dial(context.Background())
			dialErr <- err
		}()
		synctest.Wait()
		l.Close()
		assert.ErrorIs(t, <-dialErr, net.ErrClosed)
	})
}

// TestDialHonoursContext: a Dial no one accepts ends with its context.
func TestDialHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener(nil)
		defer l.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := l.Dial(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

// TestDialWithEndedContext: a Dial whose context has ended fails, even
// with an Accept ready to take the connection.
func TestDialWithEndedContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener(nil)
		accepted := make(chan net.Conn, 1)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					close(accepted)
					return
				}
				accepted <- c
			}
		}()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for range 20 {
			synctest.Wait() // Accept is waiting
			c, err := l.Dial(ctx)
			if !assert.ErrorIs(t, err, context.Canceled) {
				c.Close()
				(<-accepted).Close()
			}
		}
		l.Close()
		for c := range accepted {
			c.Close()
		}
	})
}

// TestConcurrentDials: many goroutines dial at once; every connection is
// accepted exactly once and paired with its own dialer.
func TestConcurrentDials(t *testing.T) {
	const n = 50
	l := memnet.NewListener(nil)
	defer l.Close()
	got := make(chan string, n)
	var servers sync.WaitGroup
	servers.Go(func() {
		for range n {
			c, err := l.Accept()
			if !assert.NoError(t, err) {
				return
			}
			servers.Go(func() {
				defer c.Close()
				b, err := io.ReadAll(c)
				assert.NoError(t, err)
				got <- string(b)
			})
		}
	})
	var clients sync.WaitGroup
	for i := range n {
		clients.Go(func() {
			c, err := l.Dial(t.Context())
			if !assert.NoError(t, err) {
				return
			}
			fmt.Fprintf(c, "dialer %d", i)
			c.Close()
		})
	}
	clients.Wait()
	servers.Wait()
	close(got)
	seen := map[string]bool{}
	for s := range got {
		assert.False(t, seen[s], "%q accepted twice", s)
		seen[s] = true
	}
	assert.Len(t, seen, n)
}

// TestInsideSynctestBubble: a listener, a server and connections in a
// bubble block durably, so synctest.Wait returns while they wait, and
// connection deadlines follow the fake clock.
func TestInsideSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.NewListener(nil)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "pong")
		})}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(l) }()
		synctest.Wait() // Serve waits in Accept, durably

		client := &http.Client{Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return l.Dial(ctx) },
			DisableKeepAlives: true,
		}}
		resp, err := client.Get("http://memnet/ping")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, "pong", string(body))

		// A read deadline an hour away passes at once on the fake clock.
		accepted := make(chan net.Conn, 1)
		l2 := memnet.NewListener(nil)
		go func() {
			c, _ := l2.Accept()
			accepted <- c
		}()
		c, err := l2.Dial(t.Context())
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(time.Hour)))
		_, err = c.Read(make([]byte, 1))
		assert.True(t, errors.Is(err, os.ErrDeadlineExceeded), "read error %v", err)
		assert.Equal(t, time.Hour, time.Since(start))
		c.Close()
		(<-accepted).Close()
		l2.Close()

		require.NoError(t, srv.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	})
}
