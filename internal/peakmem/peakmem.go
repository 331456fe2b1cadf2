// Package peakmem reads the peak resident set size of the running
// process, so that a test binary can fail when it used more memory than
// its package is allowed: a guard that holds on every machine the tests
// run on, where a documented GOMEMLIMIT would only be advice.
package peakmem

import (
	"errors"
	"fmt"
)

// ErrUnknown is returned by Peak on systems where the peak is not known.
var ErrUnknown = errors.New("peakmem: the peak resident set size is not known on this system")

// Peak returns the most memory the process has had resident at once, in
// bytes, since it started (the kernel's high-water mark: getrusage's
// ru_maxrss). It does not count child processes.
func Peak() (uint64, error) { return peak() }

// OverError is returned by Check when the peak went over the limit.
type OverError struct {
	Peak, Limit uint64
}

func (e *OverError) Error() string {
	return fmt.Sprintf("peak resident memory %s is over the limit of %s", Format(e.Peak), Format(e.Limit))
}

// Check returns an *OverError when the process's peak resident set size
// is over limit bytes, and nil when it is not or when the peak cannot be
// known on this system.
func Check(limit uint64) error {
	p, err := Peak()
	if err != nil {
		return nil
	}
	if p > limit {
		return &OverError{Peak: p, Limit: limit}
	}
	return nil
}

// Format writes n bytes in MiB, or GiB from 1 GiB on, with one decimal.
func Format(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
