//go:build unix

package hostload

import (
	"os"
	"syscall"
)

// voluntarySwitches returns an exited process's voluntary context
// switches, summed over all its threads (the rusage ru_nvcsw; a
// /proc/<pid>/status file counts its main thread only).
func voluntarySwitches(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Nvcsw)
	}
	return -1
}
