//go:build !linux

package tests

import (
	"errors"
	"time"
)

// processCPU is only implemented on Linux.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("process CPU time is read from /proc (Linux)")
}
