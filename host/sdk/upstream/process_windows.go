package upstream

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

// signal kills the process (kill true); Windows has no SIGTERM to send
// first.
func (p *process) signal(kill bool) {
	if kill {
		_ = p.proc.Kill()
	}
}
