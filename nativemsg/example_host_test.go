package nativemsg_test

import (
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// A native messaging host's main: frames on the real stdout, everything
// else (fmt.Println, a library's stray print) on stderr. (Compiled, not
// run: it takes over the process's standard streams.)
func ExampleOpenStdio() {
	conn, err := nativemsg.OpenStdio(nil) // a host's main: stdout is kept for frames, fd 1 → stderr
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	for {
		var msg map[string]any
		if err := conn.Decode(&msg); err != nil {
			return // io.EOF: the extension disconnected
		}
		if err := conn.Encode(map[string]any{"kind": "pong"}); err != nil {
			return // a *nativemsg.FrameSizeError: over Chrome's 1 MiB limit, nothing was written
		}
	}
}

// The same host loop run over an in-memory [nativemsg.Pipe], with the test
// playing the browser: what a host's own tests do.
func ExampleConn() {
	host, browser := nativemsg.Pipe()
	done := make(chan error, 1)
	go func() { // the host: answer every message until the browser hangs up
		defer host.Close()
		for {
			var msg struct {
				Kind string `json:"kind"`
				N    int    `json:"n"`
			}
			if err := host.Decode(&msg); err != nil {
				done <- err
				return
			}
			if err := host.Encode(map[string]any{"kind": "pong", "n": msg.N}); err != nil {
				done <- err
				return
			}
		}
	}()

	for n := 1; n <= 2; n++ {
		if err := browser.Encode(map[string]any{"kind": "ping", "n": n}); err != nil {
			log.Fatal(err)
		}
		var reply map[string]any
		if err := browser.Decode(&reply); err != nil {
			log.Fatal(err)
		}
		fmt.Println(reply["kind"], reply["n"])
	}
	browser.Close() // Chrome closes the port: the host's next read ends with io.EOF
	fmt.Println("host ended with io.EOF:", errors.Is(<-done, io.EOF))
	// Output:
	// pong 1
	// pong 2
	// host ended with io.EOF: true
}
