package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// process is the subprocess of a stdio server, started in its own process
// group, so that stopping it reaches whatever it started in turn (npx
// starts node, a shell script its command). toolscript starts it itself,
// rather than mcp-go's stdio transport, so that its standard output is
// read through a limitReader.
type process struct {
	proc   *os.Process
	stdin  *os.File // the write end of the server's standard input
	stdout *os.File // the read end of its standard output
	// exited is closed once the process has been reaped (by the one
	// goroutine that waits for it); how is set before.
	exited    chan struct{}
	how       string
	closeOnce sync.Once
}

// startProcess starts the server of cfg with toolscript's environment,
// less the variables withheld and with cfg.Env added; its standard error
// goes to stderr (nowhere when nil), whose last line is flushed once the
// process ended.
func startProcess(cfg Config, withheld []string, stderr *lineWriter) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = environment(os.Environ(), withheld, cfg.Env)

	cmd.Dir = cfg.Dir
	if stderr != nil {
		cmd.Stderr = stderr
	}
	cmd.WaitDelay = time.Second // a grandchild holding stderr open cannot stall Wait
	setProcessGroup(cmd)
	// Pipes of our own, not cmd's: Wait closes those as soon as the
	// process exits, which could lose what it wrote last.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("standard input pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("standard output pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	// The child has its own copies of its ends.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{proc: cmd.Process, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if stderr != nil {
			stderr.flush()
		}
		if cmd.ProcessState != nil {
			p.how = cmd.ProcessState.String()
		} else {
			p.how = err.Error()
		}
		close(p.exited)
	}()
	return p, nil
}

// state describes how the process ended ("exit status 1", "signal:
// killed"), or "" while it runs (and for none).
func (p *process) state() string {
	if p == nil {
		return ""
	}
	select {
	case <-p.exited:
		return p.how
	default:
		return ""
	}
}

// stop ends the process the way MCP's stdio transport asks, once its
// standard input was closed (which lets the server read what was sent
// last, such as notifications/cancelled, and exit on its own): a server
// still running after stopGrace gets SIGTERM, after another stopGrace
// SIGKILL, both sent to its whole process group; SIGKILL goes to the
// group in any case, for whatever the server started and left behind.
// It returns once the process is reaped (or a last stopGrace passed: the
// waiting goroutine still reaps it).
func (p *process) stop() {
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		p.signal(false)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
		}
	}
	p.signal(true)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
	}
	p.closeStdout()
}

// closeStdout ends the reading of the server's standard output, even
// when a grandchild still holds it open.
func (p *process) closeStdout() {
	p.closeOnce.Do(func() { _ = p.stdout.Close() })
}

// environment is base (KEY=value entries) without the variables named in
// withheld, then add: a credential meant for an API reaches no server
// whose configuration does not hand it over.
func environment(base, withheld []string, add map[string]string) []string {
	env := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(withheld, name) {
			env = append(env, kv)
		}
	}
	for k, v := range add {
		env = append(env, k+"="+v)
	}
	return env
}
