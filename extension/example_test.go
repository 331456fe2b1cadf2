package extension_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbridge/agentbridge/extension"
)

// The extension, written for a hub on port 52789 and a native host of
// your own, ready for chrome://extensions → Load unpacked.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "ext")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	err = extension.Write(dir, &extension.Options{
		NativeHost: "com.example.host",
		HubPort:    52789,
		HubToken:   "a token shared with the hub",
	})
	if err != nil {
		panic(err)
	}
	_, err = os.Stat(filepath.Join(dir, "manifest.json"))
	fmt.Println("manifest written:", err == nil)
	fmt.Println("id:", extension.ID)
	fmt.Println("allowed_origins:", extension.NativeOrigin)
	// Output:
	// manifest written: true
	// id: lllgkhehhfideabmfhnlkocagdfegbhf
	// allowed_origins: chrome-extension://lllgkhehhfideabmfhnlkocagdfegbhf/
}
