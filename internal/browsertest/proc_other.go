//go:build !unix

package browsertest

import (
	"os"
	"os/exec"
)

const (
	sigTerm = 0
	sigKill = 1
)

func supported() error { return ErrUnsupported }

func setProcessGroup(*exec.Cmd) {}

func signalGroup(int, int) {}

func killProcess(int) {}

func markedProcesses(string, int, <-chan struct{}) []int { return nil }

// ProcessAlive reports whether process pid exists.
func ProcessAlive(pid int) bool {
	_, err := os.FindProcess(pid)
	return err == nil
}

func processExe(int) string { return "" }
