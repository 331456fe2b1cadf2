package e2e

import (
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// servePages serves the pages the tests drive, on 127.0.0.1.
func servePages(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	pages := map[string]string{
		"/form": `<!doctype html><title>Search</title>
<h1>Search the catalog</h1>
<form action="/result" method="get">
  <label for="q">Query</label> <input id="q" name="q">
  <button type="submit">Search</button>
</form>`,
		"/counter": `<!doctype html><title>Counter</title>
<h1>Counter</h1>
<button id="inc" onclick="count.value = String(Number(count.value) + 1)">Add one</button>
<label for="count">Count</label> <input id="count" readonly value="0">
<a href="/form">Go to search</a>`,
		"/long": `<!doctype html><title>Long</title><h1>Top</h1>
<div style="height:3000px">spacer</div><button id="bottom">Bottom button</button>`,
		"/login": `<!doctype html><title>Login</title>
<label for="user">User</label><input id="user" name="user" value="ada">
<label for="pw">Password</label><input id="pw" type="password" name="password" value="hunter2-secret">
<p id="note">Welcome back</p>`,
	}
	for path, doc := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(doc))
		})
	}
	mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>Results</title><h1 id="r">You searched: ` +
			html.EscapeString(strings.TrimSpace(r.FormValue("q"))) + `</h1>`))
	})
	srv := httptest.NewServer(mux) // httptest listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}
