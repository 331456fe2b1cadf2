package redisstore_test

import (
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbridge/agentbridge/webagents"
	"github.com/agentbridge/agentbridge/webagents/redisstore"
)

// Wiring the Redis store and limiter into a Handler (the README's
// "Running on a fleet" block). Not run: it needs a Redis.
func Example() {
	var manifest *webagents.Manifest
	var actions map[string]webagents.ActionHandler

	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"redis:6379"}})
	h, err := webagents.NewHandler(&webagents.HandlerOptions{
		Origin: "https://shop.example", Manifest: manifest, Actions: actions,
		IdempotencyStore: redisstore.NewStore(rdb, nil),
		Limiter:          redisstore.NewLimiter(rdb, &redisstore.LimiterOptions{Interval: 120 * time.Millisecond}),
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = h
}
