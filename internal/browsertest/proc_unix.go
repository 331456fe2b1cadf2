//go:build unix

package browsertest

import (
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

func supported() error { return nil }

// setProcessGroup starts Chromium in a process group of its own, so that
// one signal reaches the browser and the helpers that stay in its group,
// and so that a terminal's Ctrl-C does not reach it before Close does.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

func signalGroup(pid int, sig syscall.Signal) {
	// A negative pid signals the whole process group.
	_ = syscall.Kill(-pid, sig)
}

func killProcess(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
