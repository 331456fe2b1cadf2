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
	fsync string // appendfsync: "always" (the tests), "everysec" (the AOF's default), or "off" (no AOF: redis-server's default)
	cmd   *exec.Cmd
}

// startRedis starts a redis-server that fsyncs every write, or skips
// (fails in CI) without one.
func startRedis(t testing.TB) *redisServer { return startRedisFsync(t, "always") }

// startRedisFsync starts a redis-server with the given appendfsync policy,
// or without an append-only file for "off".
func startRedisFsync(t testing.TB, fsync string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed (CI is set, so this fails instead of skipping)")
		}
		t.Skip("redis-server is not installed; install it (Debian: apt-get install redis-server) to run the Redis tests")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: port, fsync: fsync}
	s.start()
	t.Cleanup(s.stop)
	return s
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
	s.cmd = exec.Command(s.bin, args...)
	require.NoError(s.t, s.cmd.Start())
	rdb := redis.NewClient(&redis.Options{Addr: s.addr()})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server did not answer: %v", err)
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

// client returns a client of the server, closed with the test.
func (s *redisServer) client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
