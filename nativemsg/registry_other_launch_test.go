//go:build !windows

package nativemsg

// runLaunchHost is used on Windows only.
func runLaunchHost() {}
