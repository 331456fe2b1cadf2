package extension_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbridge/agentbridge/internal/extension"
)

// Write an extension that dials a hub on port 52789 and approves every
// approval request, then load the folder with --load-extension.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "extension-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	err = extension.Write(dir, extension.Config{
		HubPort:   52789,
		HubToken:  "0123456789abcdef0123456789abcdef",
		Approvals: extension.ApprovalApprove,
	})
	if err != nil {
		panic(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, n := range names {
		fmt.Println(filepath.Base(n))
	}
	fmt.Println("id:", extension.ID)
	fmt.Println("hub:", extension.HubURL(52789))
	// Output:
	// config.json
	// manifest.json
	// id: lllgkhehhfideabmfhnlkocagdfegbhf
	// hub: ws://127.0.0.1:52789/ws
}

// A bad configuration is refused before anything is written.
func ExampleWrite_invalid() {
	err := extension.Write(os.TempDir(), extension.Config{HubPort: 52789})
	fmt.Println(err)
	// Output:
	// extension: invalid config: HubToken is required with HubPort
}
