// Command weboperator-host is the native messaging host the WebOperator
// extension starts with chrome.runtime.connectNative("com.weboperator.bridge"):
// it joins the extension to the agent socket and the HTTP compatibility
// API. "weboperator-host install --browser chromium --extension-id ID"
// writes its manifest. See internal/hostcmd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/hostcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := hostcmd.Run(ctx, os.Args[1:], hostcmd.OSEnv())
	stop()
	os.Exit(code)
}
