package upstream

import "syscall"

// setParentDeathSignal has the kernel kill the server if toolscript dies
// without stopping it (SIGKILL, a crash).
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
