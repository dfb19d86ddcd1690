//go:build unix

package hosted

import "syscall"

// fileLimit returns how many file descriptors the process may have open
// (its soft RLIMIT_NOFILE, which Go raises to the hard limit at start-up),
// or 0 when it cannot tell.
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	cur := uint64(rl.Cur)
	if cur > 1<<40 { // RLIM_INFINITY
		return 0
	}
	return cur
}
