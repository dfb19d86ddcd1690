//go:build unix

package testupstreams

import (
	"os/exec"
	"syscall"
)

// InOwnGroup makes cmd start in a process group of its own, so that
// killGroup ends it (and StopGroup stops it) with every process it started.
func InOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group of cmd, started by InOwnGroup.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// StopGroup asks the process group of cmd, started by InOwnGroup, to stop
// (SIGTERM).
func StopGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
