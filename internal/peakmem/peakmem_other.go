//go:build !unix

package peakmem

func peak() (uint64, error) { return 0, ErrUnknown }
