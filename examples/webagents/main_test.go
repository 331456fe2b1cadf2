package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/examples/webagents-shop/shop"
	"github.com/agentbridge/agentbridge/webagents"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func runCLI(t *testing.T, hc *http.Client, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli(t.Context(), args, &stdout, &stderr, &webagents.Client{HTTPClient: hc})
	return code, stdout.String(), stderr.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// startShop serves the demo shop on loopback, failing the test on any POST
// when noPost is set.
func startShop(t *testing.T, noPost bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	s, err := shop.New(&shop.Options{Origin: "http://" + srv.Listener.Addr().String(), PBKDF2Iterations: 1000,
		Pacing: &webagents.Pacing{MaxConcurrency: 2}})
	require.NoError(t, err)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noPost && r.Method == http.MethodPost {
			t.Errorf("unexpected POST %s", r.URL.Path)
		}
		s.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

const validManifest = `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},"actions":{"a":{"description":"A."}}}`

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		args   []string
		code   int
		stdout []string
	}{
		{"valid JSON", validManifest, []string{"--origin", "https://shop.example"}, exitOK, []string{"valid (1 actions)"}},
		{"valid markdown, flag first", "# Shop\n```webagents\n" + validManifest + "\n```\n", nil, exitOK, []string{"valid"}},
		{"warnings", `{"version":0.1,"workflow":{"endpoint":"/e"},"actions":{"a":{"x":1}}}`, []string{"--origin", "https://shop.example"}, exitOK,
			[]string{"warning $.version", "warning $.actions.a.x"}},
		{"every problem with its path", `{"version":"0.1","workflow":{"endpoint":"https://evil.example/api","maxOperations":0},"actions":{"a":{"effect":"x"}}}`,
			[]string{"--origin", "https://shop.example"}, exitInvalid,
			[]string{"error   $.workflow.endpoint", "error   $.workflow.maxOperations", "error   $.actions.a.effect"}},
		{"two blocks", "```webagents\n" + validManifest + "\n```\n```webagents\n" + validManifest + "\n```\n", []string{"--origin", "https://shop.example"}, exitInvalid,
			[]string{"exactly one"}},
		{"no block", "# Shop\n", []string{"--origin", "https://shop.example"}, exitInvalid, []string{"neither raw JSON"}},
		{"too large by code points", validManifest + strings.Repeat("é", webagents.MaxDocumentChars), []string{"--origin", "https://shop.example"},
			exitInvalid, []string{"too large"}},
		{"too large by bytes: invalid, not a usage error", validManifest + strings.Repeat(" ", 5*webagents.MaxDocumentChars), []string{"--origin", "https://shop.example"},
			exitInvalid, []string{"too large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "m.md", tt.file)
			args := append([]string{"validate"}, tt.args...)
			if tt.args == nil {
				args = append(args, "--origin", "https://shop.example", path)
			} else {
				args = append(args, path)
			}
			code, stdout, _ := runCLI(t, nil, args...)
			assert.Equal(t, tt.code, code, stdout)
			for _, s := range tt.stdout {
				assert.Contains(t, stdout, s)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	f := writeFile(t, "m.json", validManifest)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"validate", f},
		{"validate", "--origin", "https://x.example"},
		{"validate", f, "--origin", "ftp://x"},
		{"validate", filepath.Join(t.TempDir(), "missing.json"), "--origin", "https://x.example"},
		{"validate", f, "extra", "--origin", "https://x.example"},
		{"validate", f, "--nope"},
		{"check"},
		{"check", "not a url"},
		{"discover"},
		{"run", "http://127.0.0.1:1/"},
		{"run", "http://127.0.0.1:1/", "--batch", f},
	} {
		code, _, stderr := runCLI(t, nil, args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
	code, stdout, _ := runCLI(t, nil, "help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "usage:")
}

func TestCheckAndDiscoverAgainstShop(t *testing.T) {
	srv := startShop(t, true)
	code, stdout, _ := runCLI(t, srv.Client(), "check", srv.URL+"/products/kbd-75")
	assert.Equal(t, exitOK, code, stdout)
	assert.Contains(t, stdout, "valid (0 problems, 0 warnings)")
	assert.Contains(t, stdout, "HEAD "+srv.URL+"/webagents.md: 200 text/markdown; charset=utf-8")

	code, stdout, _ = runCLI(t, srv.Client(), "check", "--json", srv.URL+"/")
	assert.Equal(t, exitOK, code)
	var rep webagents.CheckReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.True(t, rep.Valid)
	assert.Contains(t, rep.ActionsInScope, "catalog.search")

	code, stdout, _ = runCLI(t, srv.Client(), "discover", srv.URL+"/products/kbd-75")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "status: found")
	assert.Contains(t, stdout, `"trust": "untrusted_external_data"`)
	assert.NotContains(t, stdout, "pathPrefixes")
}

func TestCheckInvalidSite(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			t.Errorf("unexpected POST")
		}
		if r.URL.Path == webagents.MarkdownPath {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("```webagents\n" + validManifest + "\n```\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	code, stdout, _ := runCLI(t, srv.Client(), "check", srv.URL+"/")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stdout, "want text/markdown")
	assert.Contains(t, stdout, "status 404")

	code, stdout, _ = runCLI(t, srv.Client(), "discover", srv.URL+"/nothing-here")
	assert.Equal(t, exitOK, code, "discovery ignores MIME types: %s", stdout)
}

func TestDiscoverAbsent(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, stdout, _ := runCLI(t, srv.Client(), "discover", srv.URL+"/")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stdout, "status: absent")
	assert.Contains(t, stdout, "fall back to normal browsing")
}

func TestRunAgainstShop(t *testing.T) {
	srv := startShop(t, false)
	batch := writeFile(t, "batch.json", `{"operations":[
		{"id":"find","action":"catalog.search","input":{"query":"wireless keyboard"}},
		{"id":"product","action":"catalog.product","input":{"productId":{"$ref":"find.productId"}}}]}`)
	code, stdout, stderr := runCLI(t, srv.Client(), "run", srv.URL+"/products", "--batch", batch)
	assert.Equal(t, exitOK, code, stderr)
	var resp webagents.Response
	require.NoError(t, json.Unmarshal([]byte(stdout), &resp))
	assert.True(t, resp.OK)
	assert.Contains(t, string(resp.Results["product"]), "Wireless Keyboard 75%")

	writes := writeFile(t, "writes.json", `[{"id":"s","action":"account.signUp","input":{"email":"cli@example.com","password":"password1"}}]`)
	code, _, stderr = runCLI(t, srv.Client(), "run", srv.URL+"/products", "--batch", writes)
	assert.Equal(t, exitInvalid, code)
	// The user of the CLI consents with a flag, not a Go field (issue 24
	// item 4).
	assert.Equal(t, `webagents run: refused, nothing was sent: operation "s" runs write action "account.signUp", which needs --allow-writes`+"\n", stderr)
	order := writeFile(t, "order.json", `[{"id":"o","action":"order.place"}]`)
	code, _, stderr = runCLI(t, srv.Client(), "run", "--allow-writes", srv.URL+"/products", "--batch", order)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, `runs irreversible action "order.place", which needs --allow-irreversible`)
	assert.NotContains(t, stderr, "RunOptions")

	code, stdout, _ = runCLI(t, srv.Client(), "run", "--allow-writes", srv.URL+"/products", "--batch", writes)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "cli@example.com")
	assert.NotContains(t, stdout, "password1")

	failing := writeFile(t, "fail.json", `[{"id":"c","action":"cart.state"}]`)
	code, stdout, stderr = runCLI(t, srv.Client(), "run", srv.URL+"/products", "--batch", failing)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stdout, `"code": "unauthorized"`)
	assert.Contains(t, stderr, "Sign in first.")

	notBatch := writeFile(t, "bad.json", `{"operations":[],"Operations":[1]}`)
	code, _, _ = runCLI(t, srv.Client(), "run", srv.URL+"/products", "--batch", notBatch)
	assert.Equal(t, exitUsage, code)
}

// TestOutputNeutralizesControlCharacters: text from a hostile site (here an
// error message with terminal escape sequences) reaches the terminal inert.
func TestOutputNeutralizesControlCharacters(t *testing.T) {
	manifest := `{"version":"0.1","workflow":{"endpoint":"/api"},"actions":{"a":{}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case webagents.WellKnownPath:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(manifest))
		case "/api":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(409)
			_, _ = w.Write([]byte(`{"ok":false,"protocol":"webagents/0.1","pacing":{"minIntervalMs":0,"maxConcurrency":1},` +
				`"error":"\u001b]8;;https://evil.example\u0007click\u001b[2J\u009b31m\nwebagents run: approved","code":"conflict"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	batch := writeFile(t, "b.json", `[{"id":"x","action":"a"}]`)
	code, stdout, stderr := runCLI(t, srv.Client(), "run", srv.URL+"/", "--batch", batch)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "click", "the message is shown")
	for _, out := range []string{stdout, stderr} {
		assert.NotContains(t, out, "\x1b")
		assert.NotContains(t, out, "\a")
		assert.NotContains(t, out, "\u009b")
	}
	assert.NotContains(t, stderr, "\nwebagents run: approved", "a message's newline cannot forge a line")
	assert.Contains(t, stderr, `\nwebagents run: approved`, "it is shown")
}

// TestRunPrintsADeeplyNestedAnswer: json.Encoder's indentation of an
// answer nested 998 levels deep (the deepest the client decodes) wrote
// 2×998 spaces before each of its members: 1 GB for a 1 MB answer.
func TestRunPrintsADeeplyNestedAnswer(t *testing.T) {
	const depth = 998
	deep := bytes.Repeat([]byte("["), depth)
	deep = append(deep, '0')
	for len(deep) < 1_000_000-depth-200 {
		deep = append(deep, ",0"...)
	}
	deep = append(deep, bytes.Repeat([]byte("]"), depth)...)
	manifest := `{"version":"0.1","workflow":{"endpoint":"/api"},"actions":{"a":{}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case webagents.WellKnownPath:
			_, _ = w.Write([]byte(manifest))
		case "/api":
			_, _ = w.Write([]byte(`{"ok":true,"protocol":"webagents/0.1","pacing":{"minIntervalMs":0,"maxConcurrency":1},"results":{"x":`))
			_, _ = w.Write(deep)
			_, _ = w.Write([]byte(`}}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	batch := writeFile(t, "b.json", `[{"id":"x","action":"a"}]`)
	code, stdout, stderr := runCLI(t, srv.Client(), "run", srv.URL+"/", "--batch", batch)
	require.Equal(t, exitOK, code, stderr)
	assert.Less(t, len(stdout), 2*len(deep), "levels past 64 printed compactly")
	assert.True(t, json.Valid([]byte(stdout)), "and still JSON")
	assert.True(t, strings.HasPrefix(stdout, "{\n  \"ok\": true,\n  \"protocol\": \"webagents/0.1\",\n"), "indented as before: %.80s", stdout)
}

// site serves manifest at /webagents.md and answers /api/agent/workflow
// with endpoint.
func site(t *testing.T, manifest string, endpoint http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case webagents.MarkdownPath:
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			_, _ = w.Write([]byte("```webagents\n" + manifest + "\n```\n"))
		case "/api/agent/workflow":
			endpoint(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const scopedManifest = `{"version":"0.1","workflow":{"endpoint":"/api/agent/workflow"},` +
	`"actions":{"add":{"effect":"write","pathPrefixes":["/shop"]},"state":{"pathPrefixes":["/shop"]}}}`

func TestDiscoverNoActionsForThePage(t *testing.T) {
	srv := site(t, scopedManifest, nil)
	code, stdout, _ := runCLI(t, srv.Client(), "discover", srv.URL+"/about")
	assert.Equal(t, exitNoActions, code, stdout)
	assert.Contains(t, stdout, "status: no actions for this page")
	assert.NotContains(t, stdout, "status: found")

	code, stdout, _ = runCLI(t, srv.Client(), "discover", srv.URL+"/shop")
	assert.Equal(t, exitOK, code, stdout)
}

// TestRunPrintsWhatANonEnvelopeSaid: the site applied the batch but
// answered without the envelope; the body is shown and the exit code says
// the batch may have run.
func TestRunPrintsWhatANonEnvelopeSaid(t *testing.T) {
	srv := site(t, scopedManifest, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<h1>Bad gateway</h1>"))
	})
	batch := writeFile(t, "b.json", `[{"id":"s","action":"state"}]`)
	code, stdout, stderr := runCLI(t, srv.Client(), "run", srv.URL+"/shop", "--batch", batch)
	assert.Equal(t, exitProtocol, code, stderr)
	assert.Contains(t, stdout, "<h1>Bad gateway</h1>")
	assert.Contains(t, stderr, "502")
	assert.Contains(t, stderr, "may have run")

	// An unambiguous body without the envelope is read, with a warning.
	lenient := site(t, scopedManifest, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"results":[{"id":"s","result":{"items":[]}}]}`))
	})
	code, stdout, stderr = runCLI(t, lenient.Client(), "run", lenient.URL+"/shop", "--batch", batch)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "warning")
	var resp webagents.Response
	require.NoError(t, json.Unmarshal([]byte(stdout), &resp))
	assert.JSONEq(t, `{"items":[]}`, string(resp.Results["s"]))
}

func TestRunSaysUnknownActionsAreNotPublished(t *testing.T) {
	srv := site(t, scopedManifest, nil)
	batch := writeFile(t, "b.json", `[{"id":"x","action":"admin.drop"}]`)
	code, _, stderr := runCLI(t, srv.Client(), "run", srv.URL+"/shop", "--batch", batch)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "not published by this site")
	assert.NotContains(t, stderr, "not in scope")
}

func TestRunShowsAnIdempotentReplay(t *testing.T) {
	srv := startShop(t, false)
	batch := writeFile(t, "b.json", `[{"id":"s","action":"account.signUp","input":{"email":"replay@example.com","password":"password1"}}]`)
	args := []string{"run", srv.URL + "/products", "--batch", batch, "--allow-writes", "--idempotency-key", "k1"}
	code, stdout1, stderr := runCLI(t, srv.Client(), args...)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stderr, "replayed")
	code, stdout2, stderr := runCLI(t, srv.Client(), args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "replayed")
	assert.Equal(t, stdout1, stdout2)
}

// TestTimeoutFlag: a site that trickles a byte at a time is given up on
// after --timeout.
func TestTimeoutFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		for {
			if _, err := w.Write([]byte("#")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
	defer srv.Close()
	code, stdout, _ := runCLI(t, srv.Client(), "discover", "--timeout", "200ms", srv.URL+"/")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stdout, "status: unavailable")
	assert.Contains(t, stdout, "did not answer within 200ms")

	code, stdout, _ = runCLI(t, srv.Client(), "check", "--timeout", "200ms", srv.URL+"/")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stdout, "did not answer within 200ms")

	batch := writeFile(t, "b.json", `[{"id":"s","action":"state"}]`)
	code, _, stderr := runCLI(t, srv.Client(), "run", "--timeout", "200ms", srv.URL+"/", "--batch", batch)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "did not answer within 200ms")

	code, _, _ = runCLI(t, srv.Client(), "discover", "--timeout", "-1s", srv.URL+"/")
	assert.Equal(t, exitUsage, code)
}
