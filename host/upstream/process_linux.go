package upstream

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal has the kernel kill the server if toolscript dies
// without stopping it (SIGKILL, a crash).
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// watchExit returns a channel closed when process pid has exited,
// watched without reaping it (the transport's Wait does that).
func watchExit(pid int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				return
			}
		}
	}()
	return done
}
