package main

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTPGuards(t *testing.T) {
	url, _ := startHTTP(t, nil, "--allow-origin", "chrome-extension://abcdefghijklmnopabcdefghijklmnop")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	cases := []struct {
		name   string
		header map[string]string
		host   string
		status int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
		{"token in another scheme", map[string]string{"Authorization": "Basic " + httpToken}, "", http.StatusUnauthorized},
		{"web page origin", map[string]string{"Authorization": "Bearer " + httpToken, "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"null origin", map[string]string{"Authorization": "Bearer " + httpToken, "Origin": "null"}, "", http.StatusForbidden},
		{"rebinding host", map[string]string{"Authorization": "Bearer " + httpToken}, "evil.example:80", http.StatusMisdirectedRequest},
		{"allowed origin", map[string]string{"Authorization": "Bearer " + httpToken, "Origin": "chrome-extension://abcdefghijklmnopabcdefghijklmnop"}, "", http.StatusOK},
		{"no origin", map[string]string{"Authorization": "Bearer " + httpToken}, "", http.StatusOK},
		{"localhost host", map[string]string{"Authorization": "Bearer " + httpToken}, "localhost", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initBody))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, c.status, resp.StatusCode, "%s", body)
			if c.status == http.StatusOK {
				assert.Contains(t, string(body), `"protocolVersion":"2025-06-18"`)
			} else {
				assert.NotContains(t, string(body), "protocolVersion")
			}
		})
	}
}

func TestHTTPLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "example.com:80"} {
		cmd, stderr := command(t, nil, "--http", addr)
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, addr)
		assert.Contains(t, stderr.String(), "only loopback addresses", addr)
	}
}

func TestLoopbackListenAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8931": true, "localhost:0": true, "LOCALHOST:1": true, "[::1]:9": true, "127.1.2.3:80": true, "[::ffff:127.0.0.1]:1": true,
		"0.0.0.0:0": false, ":0": false, "[::]:80": false, "192.0.2.1:8080": false, "example.com:80": false, "localhost": false, "": false,
	} {
		assert.Equal(t, want, loopbackListenAddr(addr), addr)
	}
}
