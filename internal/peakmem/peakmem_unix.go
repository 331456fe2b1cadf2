//go:build unix

package peakmem

import (
	"runtime"
	"syscall"
)

func peak() (uint64, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, err
	}
	if u.Maxrss <= 0 {
		return 0, ErrUnknown
	}
	n := uint64(u.Maxrss)
	// macOS and iOS count ru_maxrss in bytes; Linux and the BSDs in KiB.
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		n <<= 10
	}
	return n, nil
}
