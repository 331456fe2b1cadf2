//go:build !unix

package bridge_test

import "errors"

func setFileLimit(n uint64) error { return errors.New("no file limits on this system") }
