package webagents_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/webagents"
)

// A site whose sign-in replaces the session cookie (against session
// fixation) names the cookie as presented with WithCredential, and the new
// one with CredentialReplaced: the retry of a keyed batch that signed in,
// sent with the old cookie because the answer was lost, is a replay.
func ExampleWithCredential() {
	var mu sync.Mutex
	type session struct{ id, user string }                   // id: a public name, not the cookie
	sessions := map[string]session{"old-cookie": {id: "s1"}} // by cookie value
	orders := 0
	type reqKey struct{}
	type request struct {
		w    http.ResponseWriter
		user string
	}
	m, err := webagents.ParseManifest([]byte(`{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},
		"actions":{"account.signIn":{"effect":"write"},"order.place":{"effect":"irreversible"}}}`), nil)
	if err != nil {
		panic(err)
	}
	h, err := webagents.NewHandler(m, map[string]webagents.ActionHandler{
		"account.signIn": webagents.ActionFunc(func(ctx context.Context, _ *webagents.ActionRequest) (any, error) {
			req := ctx.Value(reqKey{}).(*request)
			mu.Lock()
			delete(sessions, "old-cookie") // the same session under a new cookie
			sessions["new-cookie"] = session{id: "s1", user: "ada"}
			mu.Unlock()
			req.user = "ada"
			http.SetCookie(req.w, &http.Cookie{Name: "session", Value: "new-cookie"})
			webagents.CredentialReplaced(ctx, "new-cookie")
			return map[string]bool{"signedIn": true}, nil
		}),
		"order.place": webagents.ActionFunc(func(ctx context.Context, _ *webagents.ActionRequest) (any, error) {
			if ctx.Value(reqKey{}).(*request).user == "" {
				return nil, &webagents.Error{Status: 401, Code: webagents.CodeUnauthorized, Message: "Sign in first."}
			}
			mu.Lock()
			defer mu.Unlock()
			orders++
			return map[string]int{"order": orders}, nil
		}),
	}, &webagents.HandlerOptions{
		Origin: "https://shop.example",
		Context: func(w http.ResponseWriter, r *http.Request) (context.Context, error) {
			req := &request{w: w}
			ctx := context.WithValue(r.Context(), reqKey{}, req)
			c, err := r.Cookie("session")
			if err != nil {
				return ctx, nil
			}
			ctx = webagents.WithCredential(ctx, c.Value) // as presented, known or not
			mu.Lock()
			s, ok := sessions[c.Value]
			mu.Unlock()
			if !ok {
				return ctx, nil // unknown or replaced: no session
			}
			req.user = s.user
			if s.user == "" {
				return webagents.WithAnonymousSessionKey(ctx, s.id), nil
			}
			return webagents.WithSessionKey(ctx, s.id), nil
		},
	})
	if err != nil {
		panic(err)
	}
	send := func(cookie string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "https://shop.example/api/agent/workflow", strings.NewReader(
			`{"version":"0.1","operations":[{"id":"in","action":"account.signIn"},{"id":"o","action":"order.place"}]}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "order-1")
		r.AddCookie(&http.Cookie{Name: "session", Value: cookie})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	first := send("old-cookie") // its answer is lost
	fmt.Println(first.Code, first.Header().Get("Set-Cookie"))
	for _, cookie := range []string{"old-cookie", "new-cookie"} {
		retry := send(cookie)
		fmt.Println(retry.Code, "replayed:", retry.Header().Get("Idempotent-Replayed"), "Set-Cookie:", retry.Header().Get("Set-Cookie") != "")
	}
	fmt.Println("orders:", orders)
	// Output:
	// 200 session=new-cookie
	// 200 replayed: true Set-Cookie: false
	// 200 replayed: true Set-Cookie: false
	// orders: 1
}
