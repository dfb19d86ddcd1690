//go:build !unix

package testupstreams

import (
	"os"
	"os/exec"
)

// InOwnGroup does nothing where there are no Unix process groups: the
// server is killed alone.
func InOwnGroup(*exec.Cmd) {}

// killGroup kills the process cmd started.
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}

// StopGroup stops the process cmd started: killed, where there is no
// signal to ask it.
func StopGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}

func alive(pid int) bool {
	_, err := os.FindProcess(pid) // fails on Windows when there is none
	return err == nil
}
