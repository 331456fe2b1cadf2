//go:build unix && !linux

package browsertest

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}

// markedProcesses knows only Chromium's own process where there is no
// /proc to search.
func markedProcesses(_ string, pid int, exited <-chan struct{}) []int {
	select {
	case <-exited:
		return nil
	default:
		return []int{pid}
	}
}

// ProcessAlive reports whether process pid exists.
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

func processExe(int) string { return "" }
