package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/agentproto/httpapi"
)

// The HTTP API of a bridge (here one in memory, whose stand-in extension
// echoes each payload), served on loopback with the limits of NewServer:
// the token is required everywhere but /health.
func ExampleNewHandler() {
	ctx := context.Background()
	b := agentprototest.NewBridge(&agentprototest.BridgeOptions{Server: bridge.ServerOptions{Token: "secret"}})
	defer b.Close()
	b.WaitOnline(ctx)

	hs := httpapi.NewServer(httpapi.NewHandler(b.Server, nil), nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go hs.Serve(l)
	defer hs.Close()
	base := "http://" + l.Addr().String()

	post := func(path, token, body string) {
		req, err := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		fmt.Print(resp.StatusCode, " ", string(text))
		if !strings.HasSuffix(string(text), "\n") {
			fmt.Println()
		}
	}
	post("/v1/browser/click", "", `{"ref":"@e3"}`)
	post("/v1/browser/click", "secret", `{"ref":"@e3"}`)
	// Output:
	// 401 {"error":"Missing or invalid WebOperator API token"}
	// 200 {"ref":"@e3"}
}
