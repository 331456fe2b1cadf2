package redisstore

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentbridge/agentbridge/internal/wabench"
	"github.com/agentbridge/agentbridge/webagents"
)

// targetKeyedRedis is the Handler with every batch keyed and this
// package's store on a local Redis.
const targetKeyedRedis = wabench.TargetKeyed + "-redis"

// envRedis passes the Redis address to the server process.
const envRedis = "WABENCH_REDIS"

// BenchmarkServerCPU is webagents' BenchmarkServerCPU with the Redis
// store beside the memory one: the bench site's three-operation batch,
// each server in a process of its own (the floor, the Handler, keyed with
// the memory store, keyed with a Store on a local redis-server with an
// append-only file fsync'd every second), 8 keep-alive clients in this
// process, one interleaved round per iteration. The Redis server's own CPU
// is not in the figures. The Store has no per-client bound
// (MaxClientReservations -1): every batch comes from one address.
func BenchmarkServerCPU(b *testing.B) {
	srv := startRedisFsync(b, "everysec")
	wabench.Benchmark(b, "TestServerCPUChild",
		[]string{wabench.TargetFloor, wabench.TargetHandler, wabench.TargetKeyed, targetKeyedRedis},
		envRedis+"="+srv.addr())
}

// TestServerCPUChild is BenchmarkServerCPU's server process; it skips when
// not started by it.
func TestServerCPUChild(t *testing.T) {
	wabench.ChildServe(t, func(target string) webagents.IdempotencyStore {
		if target != targetKeyedRedis {
			return nil
		}
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis)})
		return NewStore(rdb, &Options{MaxClientReservations: -1})
	})
}
