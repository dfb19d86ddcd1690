//go:build !linux

package upstream

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}

// watchExit cannot watch a process without reaping it here: nil, and an
// exit is noticed by the next call instead.
func watchExit(int) <-chan struct{} { return nil }
