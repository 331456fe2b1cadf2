// Package redisstore keeps the webagents server adapter's idempotency
// records and cross-batch pacing in Redis, so that a site running several
// instances behind a load balancer runs a keyed batch at most once across
// the fleet and paces a session across all instances.
//
// It is a separate module so that the root module does not depend on a
// Redis client. Wire it into [webagents.NewHandler]:
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"redis:6379"}, ContextTimeoutEnabled: true})
//	h, err := webagents.NewHandler(manifest, actions, &webagents.HandlerOptions{
//		// Origin, Context as usual
//		IdempotencyStore: redisstore.NewStore(rdb, nil),
//		Limiter:          redisstore.NewLimiter(rdb, &redisstore.LimiterOptions{Interval: 120 * time.Millisecond}),
//	})
//
// Any [redis.UniversalClient] works: a single Redis, Sentinel (a failover
// client) or Cluster, Redis 7.0 or later. Each record and each session's pacing state is one
// key whose hash tag ({…}) is its hash, so one key's state lives on one
// shard; no operation spans two keys.
//
// # Semantics
//
// [Store] implements [webagents.IdempotencyStore] as the memory store
// does: an atomic reservation (one SET NX GET: create unless present, and
// return what is there), a completion and a release that only the
// reserving request's token can perform (short Lua scripts), the stored status and body kept for the window, and the body's
// fingerprint returned so the adapter answers 422 to a reused key. Keys
// are the adapter's hashes, so session tokens never reach Redis. A stored
// body is at most [webagents.TransportLimitBytes].
//
// [Limiter] implements [webagents.Limiter]: one script reads the session's
// next slot from Redis's own clock (TIME, so clock skew between instances
// does not matter), refuses with 429 rate_limited past MaxWait, and
// reserves slot+Interval; the key expires when the session goes idle.
// Slots are exactly Interval apart; an operation starts when its instance
// wakes up after its slot, so starts are Interval apart give or take the
// instances' scheduling delay.
//
// # Durability
//
// A batch runs at most once as long as Redis keeps the records it
// acknowledged; each keyed batch writes twice (its reservation, then its
// response). With appendonly yes and appendfsync always, a record is on
// disk before Redis answers and outlives a crash of Redis or of its
// machine, at the cost of a disk flush per write. With appendfsync
// everysec (the append-only file's default), redis.conf documents that a
// crash of the Redis process loses at most a single write and a power
// outage up to a second of writes. Without an append-only file (the
// server's default), a restart forgets every record. In each case a batch
// whose record was lost runs again if it is retried after the crash.
// Replication is asynchronous, so a failover can lose the last records too.
// A batch still running when its reservation is lost stores its response
// all the same when it ends (unless another request reserved the key in
// between), so only a retry sent before that runs it again.
//
// Every record has an expiry, so any maxmemory-policy other than
// noeviction (volatile-lru, allkeys-lru, …) lets Redis drop live records
// when it is full, and a retry then runs its batch again: give the
// store's Redis maxmemory-policy noeviction. So that one client cannot
// fill it, each client (the adapter's
// [webagents.IdempotencyReservation.Client]: a session, or an address)
// has a share: at most Options.MaxClientReservations records (default
// 1,000) holding at most Options.MaxClientBytes of responses (default
// 64 MiB), counted over its live records (running and stored, until each
// expires) in the reservation's round trip. A running batch counts as the
// largest response (1 MiB) until it stores its own, so the share holds
// however many batches the client runs at once. Past its share a client's
// new keys get 503 idempotency_unavailable with a Retry-After of when its
// oldest record expires (at most a batch deadline when its running batches
// hold the bytes); its replays, and every other client, are unaffected.
// The share's bookkeeping is two keys per client (its hash tag) and about
// 360 bytes per record; a 1 MiB response takes up to 1.25 MiB of Redis's
// memory (jemalloc's size classes). Size maxmemory for the clients of a
// window, at most 64 MiB each by default.
//
// When Redis is full all the same (maxmemory reached, so it refuses
// writes), new keyed batches get 503 idempotency_unavailable and nothing
// runs, but stored responses are still replayed (a refused reservation
// falls back to a read), a batch that was running still stores its
// response, and pacing goes on: those writes are scripts flagged
// allow-oom, which Redis runs past maxmemory. They add at most the
// responses of the batches running when Redis filled (no new reservation
// is made while it is full) and the limiter's keys of the sessions active
// in the last MaxWait (one short string each). Being full is logged once
// when it starts and once when it ends, apart from outages.
//
// # When Redis fails
//
// Every Redis call is bounded by OpTimeout (default 2 s) and by the
// caller's context, whatever the client's own timeouts. Make the client
// with ContextTimeoutEnabled, as above: go-redis then stops waiting for a
// reply when the call's context ends. Without it (go-redis's default), it
// waits up to its ReadTimeout (5 s), so the store runs each call in a
// goroutine of its own and returns at the deadline, leaving that goroutine
// to end at the client's ReadTimeout. Those left behind are at most one per
// connection of the client's pools (PoolSize, and PipelinePoolSize for the
// reservation's pipeline), whatever the request rate: calls past them
// wait for a connection, and that wait ends with the context. With
// ReadTimeout -1 they stay until Redis answers or the client is closed. A keyed batch never runs without its reservation:
// Reserve answers 503 idempotency_unavailable with Retry-After. Pacing
// fails closed by default (the operation is refused with 503 unavailable);
// LimiterOptions.FailOpen lets operations run unpaced instead, so un-keyed
// batches keep being served. Once a call has failed, the limiter tries
// Redis again once per RetryAfter; the calls in between fail open or
// closed at once rather than each wait OpTimeout. Complete retries for up to CompleteRetry
// (default 10 s); a record it could not complete stays "in progress" for
// its window (409 to retries) rather than letting the batch run twice.
// Each outage is logged once when it starts and once when it ends, not per
// request.
//
// # Defaults
//
// Options.OpTimeout and LimiterOptions.OpTimeout: 2 s. Options.RetryAfter
// and LimiterOptions.RetryAfter ([DefaultRetryAfter]): the 2 s Retry-After
// of a refusal while Redis is unreachable or full. Options.CompleteRetry:
// 10 s. LimiterOptions.MaxWait ([DefaultMaxWait]): 10 s, past which an
// operation is refused 429 with a Retry-After of when its wait would be
// within MaxWait again. Options.MaxClientReservations: 1,000 records;
// Options.MaxClientBytes: 64 MiB (negative: no share). A keyed batch's
// reservation lives the window plus the batch deadline
// ([webagents.HandlerOptions].IdempotencyWindow and Deadline), so a window
// shorter than the deadline cannot expire it mid-run; a key whose batch
// ended without its response stored answers 409 with a Retry-After that
// grows with the time since the batch deadline, from 1 s up to the
// deadline (30 s by default).
package redisstore
