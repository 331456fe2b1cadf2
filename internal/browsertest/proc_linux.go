package browsertest

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setDeathSignal makes the kernel kill Chromium if the process that
// started it dies without calling Close (a test binary killed by its
// timeout, say). Its native hosts then see their standard input close.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// markedProcesses lists the live processes whose environment holds
// MarkerEnv=marker.
func markedProcesses(marker string, _ int, _ <-chan struct{}) []int {
	want := []byte(MarkerEnv + "=" + marker)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, a zombie, or another user's
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				if ProcessAlive(pid) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// ProcessAlive reports whether process pid exists and has not exited (a
// zombie waiting to be reaped counts as exited).
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X' && state != 'x'
}

// processExe returns the path of the executable process pid runs, or "".
func processExe(pid int) string {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return exe
}
