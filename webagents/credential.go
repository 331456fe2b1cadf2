package webagents

import (
	"context"
	"sync"
)

type credentialKey struct{}

// WithCredential returns a context naming the credential the request
// presented — its session cookie's value, its bearer token — exactly as
// presented, whether or not it still resolves to a live session. A
// [Handler] then scopes the request's Idempotency-Key by this credential
// instead of by its session key: the scope of a key is what the request
// carries, which nothing a batch does can change.
//
// Sites whose session code replaces a session's credential (a sign-in that
// rotates the cookie against session fixation) need it: without it, a
// retry of a keyed batch that signed in carries the replaced cookie, which
// resolves to no session, and so falls into another scope and runs again.
// The rule for such a site's [ContextFunc]: name the credential as
// presented, also when it is unknown, expired or replaced (such a request
// has no session: give it none, or only an anonymous one); and when an
// action replaces it, report the new one with [CredentialReplaced].
//
// The credential is hashed with the key before it reaches the
// [IdempotencyStore]; it is never given to a [Limiter], which keeps pacing
// by [WithSessionKey] (or the client address), nor used to charge the
// store's per-client share. A request that presents no credential is
// scoped as before: by its session key, else its client address.
//
// A replay goes to whoever presents the same credential, key and body, as
// the first answer went to whoever sent them: a key is a capability (send
// random ones), and a credential stands for the client that holds it. So a
// holder of a replaced credential (a session-fixation attacker who planted
// the cookie) can replay only the batches sent with it, whose keys and
// bodies it would have to know, never those sent after the replacement.
func WithCredential(ctx context.Context, credential string) context.Context {
	return context.WithValue(ctx, credentialKey{}, credential)
}

func credentialOf(ctx context.Context) (string, bool) {
	c, ok := ctx.Value(credentialKey{}).(string)
	return c, ok && c != ""
}

type replacementKey struct{}

// credentialReplacement records the credential a keyed batch handed its
// client in place of the one it presented.
type credentialReplacement struct {
	mu       sync.Mutex
	replaced bool
	next     string
}

// CredentialReplaced tells the [Handler] running the batch of ctx that an
// action replaced the request's credential (named with [WithCredential])
// with next, the value the client will present from now on ("" when it
// will present none, such as a sign-out that deletes the cookie). With an
// Idempotency-Key, the batch's response is then stored under both: a
// retry that carries the old credential (the answer was lost) and one that
// carries the new (its Set-Cookie arrived, its body did not) both replay
// it. Responses of later batches, sent with the new credential, are never
// replayed to the old one. The last call of a batch wins. Outside a keyed
// batch it does nothing.
func CredentialReplaced(ctx context.Context, next string) {
	r, ok := ctx.Value(replacementKey{}).(*credentialReplacement)
	if !ok {
		return
	}
	r.mu.Lock()
	r.replaced, r.next = true, next
	r.mu.Unlock()
}

func withReplacement(ctx context.Context) (context.Context, *credentialReplacement) {
	r := &credentialReplacement{}
	return context.WithValue(ctx, replacementKey{}, r), r
}

// replacement returns the credential the batch replaced the request's with.
func (r *credentialReplacement) replacement() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next, r.replaced
}
