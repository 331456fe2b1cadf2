//go:build !windows

package nativemsg_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbridge/agentbridge/nativemsg"
)

// Installing a host manifest into a browser profile given with
// --user-data-dir needs no writes to the home directory.
func ExampleInstall() {
	profile, _ := os.MkdirTemp("", "profile")
	defer os.RemoveAll(profile)

	loc, err := nativemsg.ManifestLocation(nativemsg.Chromium, nativemsg.UserScope, "com.weboperator.bridge",
		&nativemsg.LocationOptions{UserDataDir: profile})
	if err != nil {
		panic(err)
	}
	m := &nativemsg.HostManifest{
		Name:           "com.weboperator.bridge",
		Description:    "WebOperator bridge",
		Path:           "/usr/local/bin/weboperator-host",
		Type:           "stdio",
		AllowedOrigins: []string{nativemsg.ExtensionOrigin("pgnpnlnhjmjbmobnchmlaaonbieoelff")},
	}
	if err := nativemsg.Install(m, loc, nil); err != nil {
		panic(err)
	}
	rel, _ := filepath.Rel(profile, loc.ManifestPath)
	fmt.Println(rel)
	data, _ := os.ReadFile(loc.ManifestPath)
	fmt.Print(string(data))
	// Output:
	// NativeMessagingHosts/com.weboperator.bridge.json
	// {
	//   "name": "com.weboperator.bridge",
	//   "description": "WebOperator bridge",
	//   "path": "/usr/local/bin/weboperator-host",
	//   "type": "stdio",
	//   "allowed_origins": [
	//     "chrome-extension://pgnpnlnhjmjbmobnchmlaaonbieoelff/"
	//   ]
	// }
}
