//go:build unix

package bridge_test

import "syscall"

// setFileLimit limits the process's open files to n.
func setFileLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	setTo(&lim.Cur, n)
	setTo(&lim.Max, n)
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// setTo sets *p to n: the limits are uint64 on most systems, int64 on
// FreeBSD.
func setTo[T int64 | uint64](p *T, n uint64) { *p = T(n) }
