//go:build windows

package bridge_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// Filetime counts 100 ns intervals; Nanoseconds would subtract the
	// 1601 epoch, which durations do not have.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

// processSwitches returns 0: Windows does not count a process's context
// switches where this benchmark can read them.
func processSwitches() int64 { return 0 }
