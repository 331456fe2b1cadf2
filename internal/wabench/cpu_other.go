//go:build !unix

package wabench

import (
	"errors"
	"time"
)

func processCPU() (time.Duration, error) {
	return 0, errors.New("wabench: process CPU time is only read on unix")
}
