package nativemsg_test

import (
	"bytes"
	"fmt"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// Frames are a little-endian uint32 length and the JSON body.
func ExampleWriter() {
	var stream bytes.Buffer
	w := nativemsg.NewWriter(&stream, nil)
	_ = w.Encode(map[string]string{"kind": "bridge:hello"})
	fmt.Printf("% x\n", stream.Bytes()[:4])
	fmt.Printf("%s\n", stream.Bytes()[4:])

	r := nativemsg.NewReader(&stream, nil)
	body, _ := r.ReadMessage(nil)
	fmt.Printf("read back %d bytes: %s\n", len(body), body)
	// Output:
	// 17 00 00 00
	// {"kind":"bridge:hello"}
	// read back 23 bytes: {"kind":"bridge:hello"}
}

// A frame over Chrome's 1 MiB host-to-browser limit is refused before
// anything is written, so the host can answer with an error instead of
// having Chrome close the port.
func ExampleFrameSizeError() {
	var stream bytes.Buffer
	w := nativemsg.NewWriter(&stream, nil)
	big := fmt.Sprintf("%q", bytes.Repeat([]byte("x"), nativemsg.DefaultWriteLimit))
	err := w.WriteMessage([]byte(big))
	fmt.Println(err)
	fmt.Println("bytes written:", stream.Len())
	// Output:
	// nativemsg: frame of 1048578 bytes exceeds the limit of 1048576 bytes
	// bytes written: 0
}

// Pipe connects a host and a stand-in browser in memory, for tests.
func ExamplePipe() {
	host, browser := nativemsg.Pipe()
	defer host.Close()
	defer browser.Close()

	go browser.Encode(map[string]string{"kind": "bridge:hello"})
	var hello struct{ Kind string }
	if err := host.Decode(&hello); err != nil {
		panic(err)
	}
	fmt.Println(hello.Kind)
	// Output: bridge:hello
}

func ExampleParseLaunchArgs() {
	info, err := nativemsg.ParseLaunchArgs([]string{"chrome-extension://pgnpnlnhjmjbmobnchmlaaonbieoelff/", "--parent-window=42"})
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Family, info.ExtensionID, info.ParentWindow)
	_, err = nativemsg.ParseLaunchArgs([]string{"install"})
	fmt.Println(err)
	// Output:
	// chromium pgnpnlnhjmjbmobnchmlaaonbieoelff 42
	// nativemsg: not launched by a browser: unrecognised arguments
}
