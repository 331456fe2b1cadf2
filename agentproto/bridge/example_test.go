package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/agentproto"
	"github.com/agentbridge/agentbridge/agentproto/agentprototest"
	"github.com/agentbridge/agentbridge/agentproto/bridge"
	"github.com/agentbridge/agentbridge/nativemsg"
)

// A bridge on a real Unix socket and an agent that dials it with the
// token. A function stands in for the browser extension; a real bridge
// gives [bridge.NewServer] a [bridge.Host] instead (see
// [bridge.NewHost]).
func ExampleServer_Serve() {
	dir, err := os.MkdirTemp("", "bridge")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "bridge.sock")
	const token = "example-token"

	srv := bridge.NewServer(&bridge.ServerOptions{
		Token: token,
		Extension: bridge.ExtensionFunc(func(ctx context.Context, typ string, payload json.RawMessage) (json.RawMessage, error) {
			if typ != agentproto.TypeNavigate {
				return nil, agentproto.NewUnknownRequestError(typ)
			}
			var p agentproto.NavigateParams
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, err
			}
			return json.Marshal(agentproto.NavigateResult{OK: true, TabID: 7, URL: p.URL})
		}),
	})
	ctx := context.Background()
	l, err := bridge.ListenUnix(ctx, sock) // mode 0600 from birth
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	// The agent: Dial checks that the server runs as this user before
	// it sends the token.
	c, err := agentproto.Dial(ctx, sock, &agentproto.ClientOptions{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	health, err := c.Health(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("bridge:", health.Bridge, "extension:", health.Extension)
	nav, err := c.Navigate(ctx, agentproto.NavigateParams{URL: "https://example.com/"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(nav.OK, nav.TabID, nav.URL)
	_, err = c.Snapshot(ctx, agentproto.SnapshotParams{})
	fmt.Println(err)

	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(<-served, bridge.ErrServerClosed))
	// Output:
	// bridge: online extension: online
	// true 7 https://example.com/
	// Unknown bridge request: browser.snapshot
	// true
}

// Every request carries the token; a wrong one is refused with the
// reference's message, which matches [agentproto.ErrUnauthorized].
func ExampleNewServer_token() {
	dir, err := os.MkdirTemp("", "bridge")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "bridge.sock")
	srv := bridge.NewServer(&bridge.ServerOptions{Token: "right"})
	defer srv.Close()
	ctx := context.Background()
	l, err := bridge.ListenUnix(ctx, sock)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(l)

	c, err := agentproto.Dial(ctx, sock, &agentproto.ClientOptions{Token: "wrong"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Health(ctx)
	fmt.Println(err)
	fmt.Println(errors.Is(err, agentproto.ErrUnauthorized))
	// Output:
	// Missing or invalid WebOperator API token
	// true
}

// A Host relays requests to the browser extension over a native messaging
// connection. Here the connection is an in-memory [nativemsg.Pipe] and a
// stand-in extension from agentprototest answers at the browser end; a
// real host gets its connection from [nativemsg.OpenStdio].
func ExampleNewHost() {
	hostEnd, browserEnd := nativemsg.Pipe()
	ext := agentprototest.NewExtension(browserEnd, &agentprototest.Options{ // sends bridge:hello first
		Handler: agentprototest.Mux{
			agentproto.TypeClick: agentprototest.HandlerFunc(func(_ context.Context, r *agentprototest.Request) (any, error) {
				fmt.Printf("extension got %s %s\n", r.Type, r.Payload)
				return json.RawMessage(`{"kind":"action:result","result":{"ok":true,"durationMs":9}}`), nil
			}),
		},
	})
	defer ext.Close()

	host := bridge.NewHost(hostEnd, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- host.Run(ctx) }()
	for !host.Online() { // until the extension's bridge:hello
		time.Sleep(time.Millisecond)
	}

	// A Server would relay agents' requests to host; ExtensionCaller sends
	// commands to it from this process.
	var res agentproto.ActionResult
	err := bridge.ExtensionCaller(host).Call(ctx, agentproto.TypeClick, agentproto.ClickParams{Ref: "@e3"}, &res)
	fmt.Println(res.OK(), res.Result.DurationMs, err)

	cancel()
	fmt.Println(errors.Is(<-ran, context.Canceled), host.Online())
	// Output:
	// extension got browser.click {"ref":"@e3"}
	// true 9 <nil>
	// true false
}

// A bridge, as examples/weboperator-host wires it: the browser's native
// messaging port on stdio, agents on the Unix socket. (Compiled, not run:
// it takes over stdio.)
func ExampleNewServer() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	conn, err := nativemsg.OpenStdio(nil) // Chrome's port
	if err != nil {
		log.Fatal(err)
	}
	host := bridge.NewHost(conn, nil) // bridge:hello, host-made ids, 1 MiB refusal
	srv := bridge.NewServer(&bridge.ServerOptions{Extension: host, Token: os.Getenv(agentproto.EnvToken)})
	// WEBOPERATOR_AGENT_SOCKET, else the platform's default path: 0600 from
	// birth, never replaces a stranger's socket.
	l, err := bridge.ListenUnix(ctx, os.Getenv(agentproto.EnvSocket))
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		// Serve retries EMFILE and the like itself: a return is for good.
		if err := srv.Serve(l); !errors.Is(err, bridge.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	err = host.Run(ctx) // until the extension disconnects; every pending request then fails
	srv.Shutdown(context.Background())
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
