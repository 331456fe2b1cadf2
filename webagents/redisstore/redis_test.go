package redisstore

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial on its own logger; the tests kill
	// Redis on purpose, and this package logs each outage once.
	redis.SetLogger(&logging.VoidLogger{})
	goleak.VerifyTestMain(m)
}

// redisServer is a redis-server the test started on a free loopback port,
// with its data (an append-only file, fsync'd on every write) in a temp
// dir, so that a restart keeps the records.
type redisServer struct {
	t     testing.TB
	bin   string
	dir   string
	port  int
	fsync string   // appendfsync: "always" (the tests), "everysec" (the AOF's default), or "off" (no AOF: redis-server's default)
	extra []string // more arguments (cluster mode, replication)
	cmd   *exec.Cmd
}

// startRedis starts a redis-server that fsyncs every write, or skips
// (fails in CI) without one.
func startRedis(t testing.TB) *redisServer { return startRedisFsync(t, "always") }

// startRedisFsync starts a redis-server with the given appendfsync policy,
// or without an append-only file for "off".
func startRedisFsync(t testing.TB, fsync string) *redisServer {
	return newRedisServer(t, fsync, freePort(t))
}

// newRedisServer starts a redis-server on port with the given appendfsync
// policy and extra arguments, and stops it with the test.
func newRedisServer(t testing.TB, fsync string, port int, extra ...string) *redisServer {
	t.Helper()
	s := &redisServer{t: t, bin: redisBin(t), dir: t.TempDir(), port: port, fsync: fsync, extra: extra}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// redisBin returns redis-server's path, or skips (fails in CI) without it.
func redisBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed (CI is set, so this fails instead of skipping)")
		}
		t.Skip("redis-server is not installed; install it (Debian: apt-get install redis-server) to run the Redis tests")
	}
	return bin
}

// freePort returns a loopback port nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func (s *redisServer) start() {
	s.t.Helper()
	args := []string{"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", "", "--protected-mode", "yes"}
	if s.fsync == "off" {
		args = append(args, "--appendonly", "no") // nothing on disk
	} else {
		args = append(args, "--appendonly", "yes", "--appendfsync", s.fsync)
	}
	s.cmd = exec.Command(s.bin, append(args, s.extra...)...)
	require.NoError(s.t, s.cmd.Start())
	waitPing(s.t, s.addr())
}

// waitPing waits up to healthyBudget for the Redis at addr to answer PING
// (a loaded machine has taken over 10 s to start one).
func waitPing(t testing.TB, addr string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	deadline := time.Now().Add(healthyBudget)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), healthyBudget)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server at %s did not answer: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server (as a crash would) and waits for it.
func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// healthyBudget is how long a test gives a healthy Redis to answer one
// call: its clients' dial, read and write timeouts, and the OpTimeout of
// the stores and limiters of the tests that are not about a slow Redis. It
// is a test budget, not a latency claim: on a loaded 2-core machine under
// -race a call to the local redis-server has taken over a second, and a
// call that times out makes the store or limiter report Redis unavailable
// (503), which such a test then reads as a failure. The tests about a
// dead, slow or hung Redis set their own short OpTimeout, which bounds
// each call before these timeouts do; a dial to a stopped server is
// refused at once.
const healthyBudget = 30 * time.Second

// client returns a client of the server, closed with the test. Like
// go-redis's default, it does not watch a call's context while it waits
// (the store then bounds each call itself).
func (s *redisServer) client(t testing.TB) *redis.Client { return s.clientWith(t, false) }

// clientWith returns a client of the server with ContextTimeoutEnabled set
// to watches, closed with the test.
func (s *redisServer) clientWith(t testing.TB, watches bool) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1, ContextTimeoutEnabled: watches,
		DialTimeout: healthyBudget, ReadTimeout: healthyBudget, WriteTimeout: healthyBudget})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
