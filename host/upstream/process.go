package upstream

import (
	"os/exec"
	"sync"
)

// process is the subprocess of a stdio server (empty for HTTP servers):
// started in its own process group, so that stopping it reaches whatever
// it started in turn (npx starts node, a shell script its command).
type process struct {
	mu  sync.Mutex
	cmd *exec.Cmd
}

// prepare makes cmd the process's command, to be started in its own
// process group.
func (p *process) prepare(cmd *exec.Cmd) {
	setProcessGroup(cmd)
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
}

// pid is the process's id, 0 before it started (or for HTTP).
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// signal sends SIGTERM (kill false) or SIGKILL (kill true) to the
// process's group.
func (p *process) signal(kill bool) {
	if pid := p.pid(); pid > 0 {
		signalGroup(pid, kill)
	}
}

// state describes how the process ended ("exit status 1", "signal:
// killed"), or "" while it runs.
func (p *process) state() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil {
		return ""
	}
	return p.cmd.ProcessState.String()
}
