package redisstore_test

import (
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbridge/agentbridge/webagents"
	"github.com/agentbridge/agentbridge/webagents/redisstore"
)

// The site's manifest and action handlers, as for any Handler.
var (
	manifest *webagents.Manifest
	actions  map[string]webagents.ActionHandler
)

// Wiring the Redis store and limiter into a Handler, so that every
// instance of a site shares idempotency records and pacing (the "Running
// on a fleet" block of docs/webagents.md). Not run: it needs a Redis.
func Example() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"redis:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()
	h, err := webagents.NewHandler(manifest, actions, &webagents.HandlerOptions{
		Origin:           "https://shop.example",
		IdempotencyStore: redisstore.NewStore(rdb, nil),
		Limiter:          redisstore.NewLimiter(rdb, &redisstore.LimiterOptions{Interval: 120 * time.Millisecond}),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	log.Fatal(http.ListenAndServe(":8080", mux))
}
