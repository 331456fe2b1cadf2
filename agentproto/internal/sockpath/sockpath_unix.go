//go:build !windows

package sockpath

// Default is Unix on Unix systems.
func Default() string { return Unix }
