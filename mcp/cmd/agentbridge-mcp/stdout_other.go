//go:build !unix

package main

import "os"

// guardStdout keeps standard output for MCP messages: os.Stdout is pointed
// at standard error, so that prints from this process go there.
func guardStdout() *os.File {
	out := os.Stdout
	os.Stdout = os.Stderr
	return out
}
