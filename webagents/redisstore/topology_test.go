package redisstore

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentbridge/agentbridge/webagents"
)

// TestClusterSuite runs the behavioural suite through a ClusterClient on a
// three-shard Redis Cluster, and checks that the records were spread over
// the shards (each key's hash tag picks its slot).
func TestClusterSuite(t *testing.T) {
	cli := redisTool(t, "redis-cli")
	var addrs []string
	var nodes []*redisServer
	for range 3 {
		port := freeClusterPort(t)
		dir := t.TempDir()
		nodes = append(nodes, newRedisServer(t, "off", port, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000"))
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	for _, n := range nodes {
		node := n.client(t)
		waitFor(t, 20*time.Second, "cluster_state:ok", func(ctx context.Context) bool {
			info, err := node.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
	}
	newClient := func(t *testing.T) redis.UniversalClient {
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1,
			DialTimeout: healthyBudget, ReadTimeout: healthyBudget, WriteTimeout: healthyBudget})
		t.Cleanup(func() { rdb.Close() })
		return rdb
	}
	n := 0
	t.Run("store", func(t *testing.T) {
		storeSuite(t, func(t *testing.T) webagents.IdempotencyStore {
			n++
			return NewStore(newClient(t), &Options{Prefix: fmt.Sprintf("suite%d", n), OpTimeout: healthyBudget})
		})
	})
	t.Run("limiter", func(t *testing.T) {
		limiterSuite(t, func(t *testing.T, interval, maxWait time.Duration) webagents.Limiter {
			n++
			return NewLimiter(newClient(t), &LimiterOptions{Interval: interval, MaxWait: maxWait, Prefix: fmt.Sprintf("suite%d", n), OpTimeout: healthyBudget})
		})
	})

	s := NewStore(newClient(t), &Options{Prefix: "spread"})
	for i := range 30 {
		rec, err := s.Reserve(t.Context(), reservation(fmt.Sprint("spread-", i), "t", time.Hour))
		require.NoError(t, err)
		require.Nil(t, rec)
	}
	holding := 0
	for _, n := range nodes {
		keys, err := n.client(t).Keys(t.Context(), "spread:*").Result()
		require.NoError(t, err)
		if len(keys) > 0 {
			holding++
		}
	}
	assert.Equal(t, 3, holding, "30 records on all three shards")
}

// TestSentinelFailover runs a store through a FailoverClient (Sentinel):
// a completed record written before the master is killed is answered by
// the promoted replica, and new keyed batches reserve there, without a new
// client.
func TestSentinelFailover(t *testing.T) {
	master := newRedisServer(t, "off", freePort(t), "--repl-diskless-sync-delay", "0")
	replica := newRedisServer(t, "off", freePort(t), "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	primary := master.client(t)
	waitFor(t, 20*time.Second, "the replica in sync", func(ctx context.Context) bool {
		info, err := primary.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	})
	sentinel := startSentinel(t, master.port)

	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "fleet", SentinelAddrs: []string{sentinel},
		MaxRetries: -1, DialTimeout: healthyBudget, ReadTimeout: healthyBudget, WriteTimeout: healthyBudget})
	t.Cleanup(func() { rdb.Close() })
	// The dead master refuses at once; waitFor's context bounds each try.
	s := NewStore(rdb, &Options{OpTimeout: healthyBudget, CompleteRetry: time.Second})
	ctx := t.Context()

	r := reservation("before-failover", "t1", time.Hour)
	rec, err := s.Reserve(ctx, r)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Status: 200, Body: []byte(`{"ok":true}`)}))
	// Replication is asynchronous (docs/webagents.md, Durability): wait until the
	// replica has the record, so the test is about the failover.
	acked, err := rdb.Wait(ctx, 1, 5*time.Second).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, acked, "the replica has the record")

	master.stop()
	waitFor(t, 30*time.Second, "the promoted replica answers", func(ctx context.Context) bool {
		rec, err = s.Reserve(ctx, reservation("before-failover", "t2", time.Hour))
		return err == nil
	})
	require.NotNil(t, rec)
	assert.True(t, rec.Completed)
	assert.JSONEq(t, `{"ok":true}`, string(rec.Body))
	role, err := replica.client(t).Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	assert.Equal(t, "master", role[0], "the replica was promoted")

	r = reservation("after-failover", "t3", time.Hour)
	rec, err = s.Reserve(ctx, r)
	require.NoError(t, err)
	assert.Nil(t, rec, "reserved on the new master")
	require.NoError(t, s.Complete(ctx, r, webagents.IdempotencyRecord{Status: 200, Body: []byte(`{}`)}))
}

// startSentinel starts a Sentinel watching the master on port as "fleet"
// with a quorum of one, and returns its address.
func startSentinel(t *testing.T, master int) string {
	bin := redisBin(t)
	port := freePort(t)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, "port %d\nbind 127.0.0.1\n"+
		"sentinel monitor fleet 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds fleet 500\n"+
		"sentinel failover-timeout fleet 5000\n", port, master), 0o600))
	cmd := exec.Command(bin, conf, "--sentinel")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitPing(t, addr)
	return addr
}

// redisTool returns the path of a Redis tool (redis-cli comes with
// redis-server in Debian), or skips (fails in CI) without it.
func redisTool(t *testing.T, name string) string {
	redisBin(t)
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (CI is set, so this fails instead of skipping)", name)
		}
		t.Skipf("%s is not installed; install it (Debian: apt-get install redis-tools)", name)
	}
	return bin
}

// freeClusterPort returns a free loopback port whose cluster bus port
// (port+10000) is free too.
func freeClusterPort(t *testing.T) int {
	for range 100 {
		port := freePort(t)
		if port+10000 > 65535 {
			continue
		}
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func(context.Context) bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		ok := cond(ctx)
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
